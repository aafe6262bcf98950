#include "collkit/core/provenance.h"

#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "collkit/config.h"
#include "collkit/core/error.h"
#include "collkit/core/provenance_json.h"

namespace collkit {

namespace {

// 9999-12-31T23:59:59Z: ISO 8601's four-digit years.
constexpr std::int64_t kLastSecond = 253402300799;

Provenance& state() {
  static Provenance p = [] {
    Provenance d;
    d.version = COLLKIT_VERSION;
    d.date = artifact_date();
    return d;
  }();
  return p;
}

}  // namespace

std::string iso8601_utc(std::int64_t seconds) {
  if (seconds < 0 || seconds > kLastSecond)
    throw InputError("date " + std::to_string(seconds) + " s since 1970 is outside years 1970-9999");
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string artifact_date() {
  const char* env = std::getenv("SOURCE_DATE_EPOCH");
  if (!env || !*env) return iso8601_utc(static_cast<std::int64_t>(std::time(nullptr)));
  // reproducible-builds.org: an integer of seconds since the epoch; a malformed one is an error,
  // never silently the clock.
  std::string s = env;
  bool digits = s.size() <= 12;
  for (char c : s) digits = digits && c >= '0' && c <= '9';
  if (!digits || std::stoll(s) > kLastSecond)
    throw InputError("SOURCE_DATE_EPOCH: expected whole seconds since 1970-01-01 00:00 UTC (at most " + std::to_string(kLastSecond) +
                     "), got \"" + s + "\"");
  return iso8601_utc(std::stoll(s));
}

void set_provenance(const std::string& tool, int argc, const char* const* argv) {
  std::string date = artifact_date();  // first: a bad SOURCE_DATE_EPOCH changes nothing
  Provenance& p = state();
  p.tool = tool;
  p.command.assign(argv, argv + argc);
  p.date = std::move(date);
}

const Provenance& provenance() { return state(); }

nlohmann::json provenance_json() {
  const Provenance& p = provenance();
  nlohmann::json j{{"tool", p.tool}, {"version", p.version}, {"date", p.date}};
  if (!p.command.empty()) j["command"] = p.command;
  return j;
}

std::string append_provenance(std::string object, int indent) {
  bool newline = !object.empty() && object.back() == '\n';
  while (!object.empty() && (object.back() == '\n' || object.back() == ' ')) object.pop_back();
  if (object.empty() || object.back() != '}') throw Error("append_provenance: not a JSON object's text");
  object.pop_back();
  while (!object.empty() && (object.back() == '\n' || object.back() == ' ')) object.pop_back();
  bool empty = !object.empty() && object.back() == '{';
  object +=
      (empty ? "\n" : ",\n") + std::string(static_cast<std::size_t>(indent), ' ') + "\"provenance\": " + provenance_json().dump() + "\n}";
  return newline ? object + "\n" : object;
}

}  // namespace collkit
