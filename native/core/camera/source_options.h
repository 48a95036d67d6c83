// The options a camera source takes, described by the source itself: the one description the ini's
// [camera.<source>] section, the addon's catalogue and the docs are checked against. Values arrive as text
// (from the ini, through JavaScript) and are checked here once, so every source reads typed values only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace facecheck {

enum class OptionType { Text, Integer, Number, Flag, Choice };

struct CameraOptionSpec {
  std::string key;           // ini key in [camera.<source>], snake_case
  OptionType type = OptionType::Text;
  std::string defaultValue;  // as text, in the type's spelling
  double min = 0, max = 0;   // Integer / Number bounds (inclusive)
  std::vector<std::string> choices;  // Choice
  std::string doc;           // one line for the catalogue and errors
  bool path = false;         // a file or folder: relative values are resolved against the ini's folder
  bool settable = true;      // false: set by the program itself (e.g. `face-check record`), never by the ini
};

// A source's option values after checking: every option present, defaults filled in.
class CameraOptionValues {
 public:
  const std::string& text(const std::string& key) const;
  int integer(const std::string& key) const;
  double number(const std::string& key) const;
  bool flag(const std::string& key) const;
  void set(const std::string& key, std::string value) { values_[key] = std::move(value); }

 private:
  std::map<std::string, std::string> values_;
};

// Checks `given` (key -> text, from the ini) and `programGiven` (set by the program itself; these may
// also name options the ini may not set, and win) against `specs`: unknown keys, values out of bounds or
// not one of the choices are refused with a message naming "<source>.<key>"; missing keys take their
// default.
Result checkCameraOptions(const std::string& source, const std::vector<CameraOptionSpec>& specs,
                          const std::map<std::string, std::string>& given,
                          const std::map<std::string, std::string>& programGiven, CameraOptionValues* out);

const char* optionTypeName(OptionType type);

}  // namespace facecheck
