#!/usr/bin/env python3
"""Renders the application icon's PNG sizes from resources/icons/ampgan-studio.svg.

The PNGs are committed (packaging/icons/png/NxN.png) because the build machines have no SVG
renderer that CMake could rely on; packaging/check-icons.py (a CTest test) fails when the SVG
changed and this script was not run again. Run it after every change to the SVG:

    python3 packaging/icons/render-icons.py

It renders with librsvg, the renderer desktops use for SVG icons: `rsvg-convert` when it is
installed (Debian package librsvg2-bin), otherwise librsvg and cairo called directly through
ctypes (Debian packages librsvg2-2 and libcairo2, present on most desktops).
"""
import ctypes
import ctypes.util
import hashlib
import os
import shutil
import subprocess
import sys

SIZES = (16, 22, 24, 32, 48, 64, 128, 256)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SVG = os.path.join(ROOT, "resources", "icons", "ampgan-studio.svg")
OUT = os.path.join(HERE, "png")
STAMP = os.path.join(HERE, "png", "SOURCE.sha256")


def render_rsvg_convert(size, dst):
    subprocess.run(["rsvg-convert", "--width", str(size), "--height", str(size), "--format", "png",
                    "--output", dst, SVG], check=True)


class _Rect(ctypes.Structure):
    _fields_ = [("x", ctypes.c_double), ("y", ctypes.c_double),
                ("width", ctypes.c_double), ("height", ctypes.c_double)]


def _load(name, soname):
    path = ctypes.util.find_library(name) or soname
    try:
        return ctypes.CDLL(path)
    except OSError:
        return None


def render_ctypes(size, dst):
    rsvg, cairo = _load("rsvg-2", "librsvg-2.so.2"), _load("cairo", "libcairo.so.2")
    if not rsvg or not cairo:
        sys.exit("render-icons: no SVG renderer: install librsvg2-bin (rsvg-convert), or librsvg2-2 and libcairo2")
    vp = ctypes.c_void_p
    rsvg.rsvg_handle_new_from_file.restype = vp
    rsvg.rsvg_handle_new_from_file.argtypes = [ctypes.c_char_p, ctypes.POINTER(vp)]
    rsvg.rsvg_handle_render_document.restype = ctypes.c_int
    rsvg.rsvg_handle_render_document.argtypes = [vp, vp, ctypes.POINTER(_Rect), ctypes.POINTER(vp)]
    cairo.cairo_image_surface_create.restype = vp
    cairo.cairo_image_surface_create.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    cairo.cairo_create.restype = vp
    cairo.cairo_create.argtypes = [vp]
    cairo.cairo_surface_write_to_png.restype = ctypes.c_int
    cairo.cairo_surface_write_to_png.argtypes = [vp, ctypes.c_char_p]
    for f in ("cairo_destroy", "cairo_surface_destroy"):
        getattr(cairo, f).argtypes = [vp]
    err = vp()
    handle = rsvg.rsvg_handle_new_from_file(SVG.encode(), ctypes.byref(err))
    if not handle:
        sys.exit(f"render-icons: librsvg could not read {SVG}")
    surface = cairo.cairo_image_surface_create(0, size, size)  # CAIRO_FORMAT_ARGB32
    cr = cairo.cairo_create(surface)
    if not rsvg.rsvg_handle_render_document(handle, cr, ctypes.byref(_Rect(0, 0, size, size)), ctypes.byref(err)):
        sys.exit(f"render-icons: librsvg could not render {SVG}")
    if cairo.cairo_surface_write_to_png(surface, dst.encode()) != 0:
        sys.exit(f"render-icons: could not write {dst}")
    cairo.cairo_destroy(cr)
    cairo.cairo_surface_destroy(surface)


def main():
    os.makedirs(OUT, exist_ok=True)
    render = render_rsvg_convert if shutil.which("rsvg-convert") else render_ctypes
    for size in SIZES:
        dst = os.path.join(OUT, f"{size}x{size}.png")
        render(size, dst)
        print(f"render-icons: {os.path.relpath(dst, ROOT)}")
    with open(SVG, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    with open(STAMP, "w") as f:
        f.write(f"{digest}  resources/icons/ampgan-studio.svg\n")
    print(f"render-icons: {os.path.relpath(STAMP, ROOT)} (the SVG these PNGs show)")


if __name__ == "__main__":
    main()
