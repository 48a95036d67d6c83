#include "core/camera/source_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace facecheck {

namespace {

const std::string kEmpty;

bool parseNumber(const std::string& text, double* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

std::string describeBounds(const CameraOptionSpec& s) {
  auto fmt = [](double v) {
    std::string t = std::to_string(v);
    t.erase(t.find_last_not_of('0') + 1);
    if (!t.empty() && t.back() == '.') t.pop_back();
    return t;
  };
  return fmt(s.min) + " to " + fmt(s.max);
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// The canonical spelling of a valid value, or a reason it is not one.
Result canonical(const CameraOptionSpec& s, const std::string& raw, std::string* out) {
  switch (s.type) {
    case OptionType::Text:
      *out = raw;
      return {};
    case OptionType::Flag:
      if (raw == "true" || raw == "1" || raw == "yes" || raw == "on") *out = "true";
      else if (raw == "false" || raw == "0" || raw == "no" || raw == "off") *out = "false";
      else return Result::fail(Status::FieldsValidation, "must be true or false");
      return {};
    case OptionType::Choice:
      for (const std::string& c : s.choices)
        if (c == raw) {
          *out = raw;
          return {};
        }
      return Result::fail(Status::FieldsValidation, "must be one of " + joined(s.choices));
    case OptionType::Integer:
    case OptionType::Number: {
      double v = 0;
      const bool integer = s.type == OptionType::Integer;
      if (!parseNumber(raw, &v) || (integer && std::floor(v) != v))
        return Result::fail(Status::FieldsValidation, integer ? "must be a whole number" : "must be a number");
      if (v < s.min || v > s.max) return Result::fail(Status::FieldsValidation, "must be " + describeBounds(s));
      *out = integer ? std::to_string(static_cast<long long>(v)) : raw;
      return {};
    }
  }
  return Result::fail(Status::Internal, "unknown option type");
}

}  // namespace

const char* optionTypeName(OptionType type) {
  switch (type) {
    case OptionType::Text: return "text";
    case OptionType::Integer: return "integer";
    case OptionType::Number: return "number";
    case OptionType::Flag: return "flag";
    case OptionType::Choice: return "choice";
  }
  return "text";
}

const std::string& CameraOptionValues::text(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? kEmpty : it->second;
}

int CameraOptionValues::integer(const std::string& key) const { return std::atoi(text(key).c_str()); }

double CameraOptionValues::number(const std::string& key) const { return std::atof(text(key).c_str()); }

bool CameraOptionValues::flag(const std::string& key) const { return text(key) == "true"; }

Result checkCameraOptions(const std::string& source, const std::vector<CameraOptionSpec>& specs,
                          const std::map<std::string, std::string>& given,
                          const std::map<std::string, std::string>& programGiven, CameraOptionValues* out) {
  std::map<std::string, std::string> merged = given;
  for (const auto& [key, raw] : programGiven) merged[key] = raw;
  for (const auto& [key, raw] : merged) {
    const CameraOptionSpec* spec = nullptr;
    for (const CameraOptionSpec& s : specs)
      if (s.key == key) spec = &s;
    if (!spec || (!spec->settable && programGiven.count(key) == 0)) {
      std::vector<std::string> known;
      for (const CameraOptionSpec& s : specs)
        if (s.settable) known.push_back(s.key);
      return Result::fail(Status::FieldsValidation, source + "." + key + ": unknown option (known: " +
                                                        (known.empty() ? std::string("none") : joined(known)) + ")");
    }
  }
  for (const CameraOptionSpec& s : specs) {
    auto it = merged.find(s.key);
    std::string value;
    Result r = canonical(s, it == merged.end() ? s.defaultValue : it->second, &value);
    if (!r.ok()) return Result::fail(Status::FieldsValidation, source + "." + s.key + ": " + r.detail);
    out->set(s.key, std::move(value));
  }
  return {};
}

}  // namespace facecheck
