#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/core/flat_index.h"
#include "collkit/core/json_cursor.h"
#include "collkit/core/memory.h"
#include "collkit/core/size.h"

using namespace collkit;

TEST_CASE("sizes take nccl-tests' 1024-based suffixes") {
  CHECK(parse_size_bytes("64") == 64);
  CHECK(parse_size_bytes("4K") == 4096);
  CHECK(parse_size_bytes("1M") == 1048576);
  CHECK(parse_size_bytes("8G") == 8ull << 30);
  CHECK(parse_size_bytes("2gb") == 2ull << 30);
  CHECK(format_size_bytes(4096) == "4K");
  CHECK(format_size_bytes(1536) == "1536");
  CHECK(format_size_bytes(8ull << 30) == "8G");
  CHECK_THROWS_WITH_AS(parse_size_bytes("12Q"), "invalid size \"12Q\": unknown suffix (use K, M, G or T, 1024-based)", InputError);
  CHECK_THROWS_WITH_AS(parse_size_bytes("big"), "invalid size \"big\": expected a number with an optional K, M, G or T suffix", InputError);
  CHECK_THROWS_WITH_AS(parse_size_bytes("99999999999T"), "invalid size \"99999999999T\": too large", InputError);
  // Fractions, as nccl-tests takes them: whole bytes, rounded down.
  CHECK(parse_size_bytes("1.5M") == 1572864);
  CHECK(parse_size_bytes("0.5K") == 512);
  CHECK(parse_size_bytes("1.1K") == 1126);
  CHECK(parse_size_bytes("2.25G") == (9ull << 30) / 4);
  CHECK(parse_size_bytes("16777215.999999999T") == std::numeric_limits<std::uint64_t>::max() - 1099);
  CHECK_THROWS_WITH_AS(parse_size_bytes("1.5"), "invalid size \"1.5\": a fraction of a byte: give a K, M, G or T suffix (1.5M)",
                       InputError);
  CHECK_THROWS_WITH_AS(parse_size_bytes("1.M"), "invalid size \"1.M\": expected digits after the point", InputError);
  CHECK_THROWS_WITH_AS(parse_size_bytes("16777216.5T"), "invalid size \"16777216.5T\": too large", InputError);
}

TEST_CASE("a number past double's range is an InputError with its place, not a library exception") {
  // Found by fuzz_topology: nlohmann's out_of_range escaped every loader.
  CHECK_THROWS_WITH_AS(json::parse("x.json", "{\"a\": 1,\n \"b\": 1e309}"), "x.json:2:7: invalid JSON: number out of range (1e309)",
                       InputError);
  CHECK_THROWS_WITH_AS(json::parse("x.json", "[-4444E444]"), "x.json:1:2: invalid JSON: number out of range (-4444E444)", InputError);
}

TEST_CASE("the JSON cursor names file and pointer in every error") {
  std::string file = "x.json";
  auto doc = json::parse(file, R"({"a": {"b": [1, "two", -3]}, "s": "collkit.topology/1"})");
  json::Cursor root(file, doc);
  CHECK(root.at("a").at("b")[0].integer() == 1);
  CHECK_THROWS_WITH_AS(root.at("a").at("b")[1].number(), "x.json: /a/b/1: expected number, got string \"two\"", InputError);
  CHECK_THROWS_WITH_AS(root.at("a").at("b")[2].positive_number(), "x.json: /a/b/2: must be > 0, got -3", InputError);
  CHECK_THROWS_WITH_AS(root.at("a").at("c"), "x.json: /a: missing field \"c\"", InputError);
  CHECK_THROWS_WITH_AS(root.at("a").at("b")[7], "x.json: /a/b: index 7 out of range", InputError);
  // Unsigned values past INT64_MAX are refused, not wrapped to negative ones.
  auto big = json::parse(file, R"({"n": 18446744073709551615, "m": 9223372036854775807})");
  CHECK(json::Cursor(file, big).at("m").integer() == INT64_MAX);
  CHECK_THROWS_WITH_AS(json::Cursor(file, big).at("n").integer(),
                       "x.json: /n: integer 18446744073709551615 is out of range (at most 9223372036854775807)", InputError);
  // A NUL byte once ended nlohmann's input: the file was accepted with anything after it unread.
  CHECK_THROWS_WITH_AS(json::parse(file, std::string("{\"a\": 1}\n\0", 10)), "x.json:2:1: invalid JSON: a NUL byte", InputError);
  CHECK_THROWS_WITH_AS(json::parse(file, std::string("{\"a\": 1}\0junk", 13)), "x.json:1:9: invalid JSON: a NUL byte", InputError);
  CHECK_THROWS_WITH_AS(json::parse(file, "{\n  \"a\": 1,\n  oops\n}"),
                       "x.json:3:3: invalid JSON: syntax error while parsing object key - invalid literal; expected string literal",
                       InputError);
}

TEST_CASE("files are written atomically and errors name the path") {
  auto dir = std::filesystem::temp_directory_path() / "collkit-core-test";
  std::filesystem::create_directories(dir);
  auto path = (dir / "out.json").string();
  write_file_atomic(path, "first");
  write_file_atomic(path, "second");
  CHECK(read_file(path) == "second");
  std::size_t files = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir)) ++files;
  CHECK(files == 1);  // no temporary left behind
  CHECK_THROWS_WITH_AS(read_file((dir / "missing.json").string()), ((dir / "missing.json").string() + ": cannot open: No such file or directory").c_str(), SystemError);
  CHECK_THROWS_AS(write_file_atomic((dir / "no-such-dir" / "x.json").string(), "x"), SystemError);
  // An input file past the limit: a regular one by its size, a device as it is read (/dev/zero
  // once read forever). The 1 GiB limit itself is the same code with another number.
  CHECK_THROWS_WITH_AS(read_file(path, 5), (path + ": larger than 5 bytes (the limit on input files)").c_str(), InputError);
  CHECK(read_file(path, 6) == "second");
  CHECK_THROWS_WITH_AS(read_file("/dev/zero", 1 << 20), "/dev/zero: larger than 1048576 bytes (the limit on input files)", InputError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a writer ended by SIGTERM or SIGINT removes its temporary file, stale ones are swept") {
  auto dir = std::filesystem::temp_directory_path() / ("collkit-tmp-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  int checked = 0;
  for (int sig : {SIGTERM, SIGINT}) {
    auto tmp = (dir / ("out.json.tmp." + std::to_string(sig) + "xxxxx")).string();
    std::ofstream(tmp) << "half an artifact";
    REQUIRE(std::filesystem::exists(tmp));
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // As write_file_atomic holds it while it writes; the signal arrives mid-write. The test
      // runner handles the signal itself (to report a crash): a tool's process has the default.
      ::signal(sig, SIG_DFL);
      detail::TmpRegistration registered(tmp);
      ::raise(sig);
      ::_exit(0);  // not reached: the signal ends the process
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    CHECK_FALSE(std::filesystem::exists(tmp));
    ++checked;
  }
  CHECK(checked == 2);

  // Left by a SIGKILL: an hour-old temporary of the target goes at the next write; a fresh one
  // (another writer's, now) and other names stay.
  auto target = (dir / "plan.json").string();
  auto old_tmp = target + ".tmp.ABC123", fresh_tmp = target + ".tmp.DEF456", other = target + ".tmp.kept";
  for (const auto& f : {old_tmp, fresh_tmp, other}) std::ofstream(f) << "x";
  auto hours_ago = std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  std::filesystem::last_write_time(old_tmp, hours_ago);
  std::filesystem::last_write_time(other, hours_ago);
  write_file_atomic(target, "{}");
  CHECK_FALSE(std::filesystem::exists(old_tmp));
  CHECK(std::filesystem::exists(fresh_tmp));
  CHECK(std::filesystem::exists(other));
  CHECK(read_file(target) == "{}");
  std::filesystem::remove_all(dir);
}

TEST_CASE("the flat index keeps every pair, reserved ahead or grown as it fills") {
  for (bool reserved : {false, true}) {
    FlatIndex index;
    if (reserved) index.reserve(5000);
    std::size_t added = 0, found = 0;
    for (std::uint32_t a = 0; a < 50; ++a)
      for (std::uint32_t b = 0; b < 100; ++b) added += index.emplace(FlatIndex::pair(a, b), a * 100 + b) ? 1 : 0;
    CHECK_FALSE(index.emplace(FlatIndex::pair(7, 7), 1));  // there already: kept as it was
    for (std::uint32_t a = 0; a < 50; ++a)
      for (std::uint32_t b = 0; b < 100; ++b) found += index.find(FlatIndex::pair(a, b)) == a * 100 + b ? 1 : 0;
    CHECK(added == 5000);
    CHECK(found == 5000);
    CHECK(index.find(FlatIndex::pair(50, 0)) == FlatIndex::kNone);
    CHECK(index.find(FlatIndex::pair(0, 100)) == FlatIndex::kNone);
  }
}

TEST_CASE("huge pages: the glibc tunable added once, kept where the user set it, left out where it changes nothing") {
  const std::string_view madvise = "always [madvise] never\n", always = "[always] madvise never\n", never = "always madvise [never]\n";
  CHECK(huge_page_tunables(nullptr, nullptr, nullptr, madvise) == "glibc.malloc.hugetlb=1");
  CHECK(huge_page_tunables("", nullptr, nullptr, madvise) == "glibc.malloc.hugetlb=1");
  // The user's own tunables stay, ahead of it.
  CHECK(huge_page_tunables("glibc.malloc.arena_max=2", nullptr, nullptr, madvise) == "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  // Set already (by the user, either way, or by the start before the restart): no restart.
  CHECK_FALSE(huge_page_tunables("glibc.malloc.hugetlb=0", nullptr, nullptr, madvise));
  CHECK_FALSE(huge_page_tunables("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1", nullptr, nullptr, madvise));
  // Opted out; or THP on every mapping already, or on none; or no THP file at all.
  CHECK_FALSE(huge_page_tunables(nullptr, "0", nullptr, madvise));
  CHECK(huge_page_tunables(nullptr, "1", nullptr, madvise) == "glibc.malloc.hugetlb=1");
  CHECK_FALSE(huge_page_tunables(nullptr, nullptr, nullptr, always));
  CHECK_FALSE(huge_page_tunables(nullptr, nullptr, nullptr, never));
  CHECK_FALSE(huge_page_tunables(nullptr, nullptr, nullptr, ""));
  // Something preloaded (an allocator of its own; valgrind, which would not follow the restart).
  CHECK_FALSE(huge_page_tunables(nullptr, nullptr, "/usr/libexec/valgrind/vgpreload_core-amd64-linux.so", madvise));
  CHECK(huge_page_tunables(nullptr, nullptr, "", madvise) == "glibc.malloc.hugetlb=1");
}

TEST_CASE("exit codes follow the error kind") {
  CHECK(exit_code_for(InputError("x")) == 2);
  CHECK(exit_code_for(SystemError("x")) == 3);
  CHECK(exit_code_for(UnsupportedError("x")) == 4);
  CHECK(exit_code_for(std::runtime_error("x")) == 1);
}

TEST_CASE("an output onto a FIFO, a device or a symbolic link is written through, never replaced") {
  auto dir = std::filesystem::temp_directory_path() / "collkit-core-special";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // A symbolic link stays a link; its target gets the content.
  const auto target = dir / "real.json", link = dir / "link.json";
  write_file_atomic(target.string(), "old");
  std::filesystem::create_symlink(target, link);
  write_file_atomic(link.string(), "new");
  CHECK(std::filesystem::is_symlink(link));
  CHECK(read_file(target.string()) == "new");
  // A FIFO stays a FIFO; its reader gets the content. A device node takes the same path (as root,
  // -o /dev/null once replaced /dev/null; not tried here, where a failure would do it again).
  const auto fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(reader >= 0);
  write_file_atomic(fifo.string(), "through");
  CHECK(std::filesystem::is_fifo(fifo));
  char buf[16] = {};
  CHECK(::read(reader, buf, sizeof buf) == 7);
  CHECK(std::string(buf) == "through");
  ::close(reader);
  std::size_t files = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir)) ++files;
  CHECK(files == 3);  // no temporary left behind
  CHECK_THROWS_WITH_AS(write_file_atomic(dir.string(), "x"), (dir.string() + ": is a directory").c_str(), SystemError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("an output that is also an input is refused, by any path to it") {
  auto dir = std::filesystem::temp_directory_path() / "collkit-core-inout";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string in = (dir / "plan.json").string(), other = (dir / "other.json").string();
  write_file_atomic(in, "{}");
  std::filesystem::create_symlink(in, dir / "alias.json");
  CHECK_THROWS_WITH_AS(check_output_not_input(in, {other, in}),
                       (in + ": the output would overwrite the input " + in + "; write it elsewhere").c_str(), InputError);
  const std::string dotted = (dir / "." / "plan.json").string(), alias = (dir / "alias.json").string();
  CHECK_THROWS_AS(check_output_not_input(dotted, {in}), InputError);
  CHECK_THROWS_AS(check_output_not_input(alias, {in}), InputError);
  CHECK_NOTHROW(check_output_not_input(other, {in}));  // not there yet: cannot be the input
  CHECK_NOTHROW(check_output_not_input("-", {"-"}));
  CHECK_NOTHROW(check_output_not_input("", {in}));
  std::filesystem::remove_all(dir);
}
