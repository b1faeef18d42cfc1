#include "core/common/error.h"

namespace ampgan {

namespace {
std::string compose(const std::string& what, const std::string& subject, const std::string& hint) {
  std::string s = what;
  if (!subject.empty()) s += " (" + subject + ")";
  if (!hint.empty()) s += ". " + hint;
  return s;
}
}  // namespace

Error::Error(std::string what, std::string subject, std::string hint)
    : std::runtime_error(compose(what, subject, hint)),
      what_(std::move(what)),
      subject_(std::move(subject)),
      hint_(std::move(hint)) {}

}  // namespace ampgan
