#include "collkit/core/json_cursor.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "collkit/core/error.h"

namespace collkit::json {

namespace {

// JSON pointer escaping (RFC 6901): '~' -> "~0", '/' -> "~1".
std::string escape_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// "FILE:LINE:COL" of the byte at `offset`, as an editor shows it.
std::string place(const std::string& file, const std::string& text, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < std::min(offset, text.size()); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return file + ":" + std::to_string(line) + ":" + std::to_string(col);
}

}  // namespace

nlohmann::json parse(const std::string& file, const std::string& text) {
  // nlohmann's lexer takes a NUL byte for the end of input and would accept what follows it
  // unread; JSON allows none anywhere.
  if (auto nul = text.find('\0'); nul != std::string::npos) throw InputError(place(file, text, nul) + ": invalid JSON: a NUL byte");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based.
    const std::size_t end = e.byte == 0 ? 0 : e.byte - 1;
    std::string what = e.what();
    // nlohmann's message reads "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ...";
    // keep only the part after the position.
    auto pos = what.find(": syntax error");
    std::string detail = pos == std::string::npos ? what : what.substr(pos + 2);
    // Drop the "; last read: '...'" echo of the input: it may hold newlines, and errors are one line.
    if (auto lr = detail.find("; last read: '"); lr != std::string::npos) {
      auto close = detail.find("'; ", lr + 14);
      detail.erase(lr, close == std::string::npos ? std::string::npos : close + 1 - lr);
    }
    throw InputError(place(file, text, end) + ": invalid JSON: " + detail);
  } catch (const nlohmann::json::out_of_range& e) {
    // A number past double's range (1e309): nlohmann says "number overflow parsing '1e309'" with no
    // position (found by fuzz_topology: an uncaught library exception); the number is found again.
    std::string what = e.what();
    auto open = what.find('\''), close = what.rfind('\'');
    std::string number = open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : std::string();
    std::size_t at = number.empty() ? std::string::npos : text.find(number);
    throw InputError((at == std::string::npos ? file : place(file, text, at)) + ": invalid JSON: number out of range" +
                     (number.empty() ? "" : " (" + number.substr(0, 40) + ")"));
  }
}

std::string describe(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return std::string("boolean ") + (v.get<bool>() ? "true" : "false");
    case nlohmann::json::value_t::string: return "string " + v.dump();
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return "number " + v.dump();
    case nlohmann::json::value_t::object: return "object";
    case nlohmann::json::value_t::array: return "array";
    default: return "value";
  }
}

Cursor::Cursor(const std::string& file, const nlohmann::json& value, std::string pointer)
    : file_(&file), value_(&value), pointer_(std::move(pointer)) {}

void Cursor::fail(const std::string& what) const { throw InputError(*file_ + ": " + pointer() + ": " + what); }

void Cursor::expect_object() const {
  if (!value_->is_object()) fail("expected object, got " + describe(*value_));
}

void Cursor::expect_array() const {
  if (!value_->is_array()) fail("expected array, got " + describe(*value_));
}

Cursor Cursor::at(std::string_view key) const {
  auto c = find(key);
  if (!c) fail("missing field \"" + std::string(key) + "\"");
  return *c;
}

std::optional<Cursor> Cursor::find(std::string_view key) const {
  expect_object();
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return Cursor(*file_, *it, pointer_ + "/" + escape_token(key));
}

Cursor Cursor::operator[](std::size_t index) const {
  expect_array();
  if (index >= value_->size()) fail("index " + std::to_string(index) + " out of range");
  return Cursor(*file_, (*value_)[index], pointer_ + "/" + std::to_string(index));
}

std::size_t Cursor::size() const {
  expect_array();
  return value_->size();
}

std::string Cursor::string() const {
  if (!value_->is_string()) fail("expected string, got " + describe(*value_));
  return value_->get<std::string>();
}

double Cursor::number() const {
  if (!value_->is_number()) fail("expected number, got " + describe(*value_));
  double d = value_->get<double>();
  if (!std::isfinite(d)) fail("expected a finite number");
  return d;
}

double Cursor::positive_number() const {
  double d = number();
  if (!(d > 0)) fail("must be > 0, got " + value_->dump());
  return d;
}

double Cursor::non_negative_number() const {
  double d = number();
  if (d < 0) fail("must be >= 0, got " + value_->dump());
  return d;
}

std::int64_t Cursor::integer() const {
  if (!value_->is_number_integer()) fail("expected integer, got " + describe(*value_));
  // An unsigned value above INT64_MAX would wrap to a negative one.
  if (value_->is_number_unsigned() && value_->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    fail("integer " + std::to_string(value_->get<std::uint64_t>()) + " is out of range (at most " + std::to_string(INT64_MAX) + ")");
  return value_->get<std::int64_t>();
}

bool Cursor::boolean() const {
  if (!value_->is_boolean()) fail("expected boolean, got " + describe(*value_));
  return value_->get<bool>();
}

void Cursor::expect_keys(std::initializer_list<std::string_view> known) const {
  expect_object();
  for (auto& [key, val] : value_->items()) {
    bool ok = false;
    for (auto k : known) ok = ok || k == key;
    if (ok) continue;
    std::string list;
    for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    fail("unknown field \"" + key + "\" (expected " + list + ")");
  }
}

void Cursor::expect_schema(std::string_view kind, int major) const {
  expect_object();
  std::string want = "collkit." + std::string(kind) + "/" + std::to_string(major);
  auto s = find("schema");
  if (!s) fail("missing field \"schema\" (expected \"" + want + "\")");
  std::string got = s->string();
  if (got == want) return;
  std::string prefix = "collkit." + std::string(kind) + "/";
  if (got.rfind(prefix, 0) == 0)
    s->fail("unsupported version \"" + got + "\" (this collkit reads \"" + want + "\")");
  s->fail("expected \"" + want + "\", got \"" + got + "\"");
}

}  // namespace collkit::json
