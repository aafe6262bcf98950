#pragma once
// coll-run's output: nccl-tests' table, column for column, then the native collective's table
// and the comparison; and the collkit.results/1 file.

#include <iosfwd>

#include "collkit/exec/harness.h"

namespace collkit::exec {

void print_preamble(std::ostream& out, const Results& r, const RunOptions& opt);
void print_table_head(std::ostream& out, const Table& t, bool reduces);
void print_row(std::ostream& out, const Row& row);
/// Closes the table: average bus bandwidth, then the native table and the comparison.
void print_table_tail(std::ostream& out, const Table& t, bool baseline);

}  // namespace collkit::exec
