#!/usr/bin/env bash
# Checks the documentation's links, as a CTest (docs.links): every relative link and image in
# README.md, docs/*.md, tests/README.md and packaging/README.md names a file or folder that
# exists, and every #anchor names a heading of its target (GitHub's rule: lowercase, spaces to
# '-', punctuation dropped, '-1', '-2' for repeated headings) or an <a name>/id there. Links in
# code (fenced or indented blocks, `inline`) and to other sites (http:, mailto:) are not checked.
#   scripts/check-links.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
python=/usr/bin/python3; [[ -x $python ]] || python=$(command -v python3 || true)
[[ -n "$python" ]] || { echo "check-links: needs python3 (Debian package python3; scripts/setup.sh --dev installs it)" >&2; exit 1; }
shopt -s nullglob
exec "$python" - README.md docs/*.md tests/README.md packaging/README.md <<'PY'
import os, re, sys

def strip_code(lines, inline=True):
    """The lines with code blocks blanked and, if inline, `inline code` removed (numbers kept)."""
    out, fence, indented, prev_blank = [], None, False, True
    for line in lines:
        s = line.rstrip("\n")
        m = re.match(r"^\s*(```+|~~~+)", s)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append("")
            continue
        if m:
            fence = m.group(1)
            out.append("")
            continue
        is_blank = not s.strip()
        if re.match(r"^( {4}|\t)", s) and (prev_blank or indented):
            indented = True
        elif not is_blank:
            indented = False
        if indented:
            out.append("")
            prev_blank = is_blank
            continue
        prev_blank = is_blank
        out.append(re.sub(r"(`+).*?\1", "", s) if inline else s)
    return out

def slug(text):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)   # a link's text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    kept = "".join(c for c in text if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")

anchor_cache = {}
def anchors(path):
    if path not in anchor_cache:
        found, seen = set(), {}
        with open(path, encoding="utf-8") as f:
            raw = f.readlines()
        for line in strip_code(raw, inline=False):
            m = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                base = slug(m.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
            for a in re.finditer(r"<a\s[^>]*(?:name|id)=\"([^\"]+)\"", line):
                found.add(a.group(1))
        anchor_cache[path] = found
    return anchor_cache[path]

link_re = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
ref_re = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$")
bad = checked = 0
for doc in sys.argv[1:]:
    with open(doc, encoding="utf-8") as f:
        lines = strip_code(f.readlines())
    for num, line in enumerate(lines, 1):
        targets = [m.group(1) for m in link_re.finditer(line)]
        m = ref_re.match(line)
        if m:
            targets.append(m.group(1))
        for t in targets:
            if not t or re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I):
                continue
            checked += 1
            path, _, frag = t.partition("#")
            target = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
            if not os.path.exists(target):
                print(f"check-links: {doc}:{num}: {t}: no such file {target}", file=sys.stderr)
                bad += 1
                continue
            if frag and target.endswith(".md") and frag not in anchors(target):
                print(f"check-links: {doc}:{num}: {t}: {target} has no heading with the anchor #{frag}",
                      file=sys.stderr)
                bad += 1
print(f"check-links: {checked} links in {len(sys.argv) - 1} files, {bad} broken")
sys.exit(1 if bad else 0)
PY
