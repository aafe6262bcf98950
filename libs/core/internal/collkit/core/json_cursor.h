#pragma once
// Internal to collkit's libraries (linked privately, never in a public header): checked reading
// of JSON artifacts. Every accessor names the file and the JSON pointer of the value in its error,
// so a loader never reads an unchecked obj["key"].

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace collkit::json {

/// Parses `text`; a syntax error names the file, line and column.
nlohmann::json parse(const std::string& file, const std::string& text);

/// A short description of a value for error messages: `string "a"`, `number 3`, `object`.
std::string describe(const nlohmann::json& value);

/// A position in a parsed document: the value, the file it came from and its JSON pointer.
class Cursor {
 public:
  Cursor(const std::string& file, const nlohmann::json& value, std::string pointer = "");

  /// Required member of an object; "missing field" error when absent.
  Cursor at(std::string_view key) const;
  /// Optional member of an object.
  std::optional<Cursor> find(std::string_view key) const;
  /// Element of an array.
  Cursor operator[](std::size_t index) const;
  /// Number of elements of an array (error when not an array).
  std::size_t size() const;

  std::string string() const;
  double number() const;
  double positive_number() const;      ///< > 0
  double non_negative_number() const;  ///< >= 0
  std::int64_t integer() const;
  bool boolean() const;

  void expect_object() const;
  void expect_array() const;
  /// Refuses members of this object not in `known` (a misspelt "lane" is an error, not ignored).
  void expect_keys(std::initializer_list<std::string_view> known) const;
  /// Checks `"schema": "collkit.<kind>/<major>"` at this object.
  void expect_schema(std::string_view kind, int major) const;

  const nlohmann::json& value() const { return *value_; }
  const std::string& file() const { return *file_; }
  /// The JSON pointer, "/" for the root.
  std::string pointer() const { return pointer_.empty() ? "/" : pointer_; }

  /// Throws InputError "<file>: <pointer>: <what>".
  [[noreturn]] void fail(const std::string& what) const;

 private:
  const std::string* file_;
  const nlohmann::json* value_;
  std::string pointer_;
};

}  // namespace collkit::json
