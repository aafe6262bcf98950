// coll-topo: discover, synthesise, import, show and validate cluster topologies.
// Argument parsing and printing only; everything else is libs/topo.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "collkit/core/error.h"
#include "collkit/core/file.h"
#include "collkit/topo/discover.h"
#include "collkit/topo/import.h"
#include "collkit/topo/io.h"
#include "collkit/topo/show.h"
#include "collkit/topo/synth.h"
#include "subcommands.h"

namespace topo = collkit::topo;

namespace {

struct Options {
  std::string output;
  // discover
  int ranks_per_host = 0;
  std::string fabric;
  bool no_measure = false;
  // synth
  std::string node = "dgx-h100";
  int nodes = 1;
  // import
  std::string nccl_xml;
  // show / validate
  std::string file;
  bool dot = false;
  bool no_matrix = false;
  std::size_t first = 0;
  std::size_t count = 16;
  bool first_given = false, count_given = false;  // --dot draws a window only when asked
};

// Writes the topology and says where, unless it went to stdout.
void emit(const topo::Topology& t, const std::string& output) {
  if (output.empty() || output == "-") {
    std::cout << topo::to_json(t);
    return;
  }
  topo::save(t, output);
  collkit::app::wrote(output, std::to_string(t.num_ranks()) + " ranks, " + std::to_string(t.num_vertices()) + " vertices, " +
                                  std::to_string(t.num_links()) + " links");
}

int run_discover(const Options& o) {
  topo::DiscoverOptions opt{o.ranks_per_host, o.fabric, !o.no_measure};
  if (topo::under_launcher()) {
    // Every rank fails alike (discover_cluster broadcasts rank 0's verdict): only rank 0 says why,
    // before any rank exits. root stays true when MPI failed before the ranks were known, so such
    // an error is printed.
    bool root = true, reported = false;
    topo::Topology t;
    try {
      t = topo::discover_cluster(opt, &root, [&](const std::exception& e) {
        std::cerr << "coll-topo: error: " << e.what() << "\n" << std::flush;
        reported = true;
      });
    } catch (const std::exception& e) {
      if (root && !reported) throw;
      return collkit::exit_code_for(e);
    }
    if (root) emit(t, o.output);
    return 0;
  }
  emit(topo::discover_local(opt), o.output);
  return 0;
}

int run_synth(const Options& o) {
  emit(topo::synth({o.node, o.nodes, o.fabric}), o.output);
  return 0;
}

int run_import(const Options& o) {
  collkit::check_output_not_input(o.output, {o.nccl_xml});
  emit(topo::import_nccl_xml_file(o.nccl_xml), o.output);
  return 0;
}

int run_show(const Options& o) {
  topo::Topology t = topo::load(o.file);
  if (o.dot) {
    // The whole topology unless a window was asked for.
    bool window = o.first_given || o.count_given;
    if (window && o.first >= t.num_ranks())
      throw collkit::InputError(fmt::format("--first {}: the topology has {} ranks (0 to {})", o.first, t.num_ranks(), t.num_ranks() - 1));
    std::cout << (window ? topo::to_dot(t, o.first, o.count) : topo::to_dot(t));
    return 0;
  }
  std::cout << topo::summary(t);
  if (!o.no_matrix) std::cout << "\n" << topo::matrix(t, o.first, o.count);
  return 0;
}

int run_validate(const Options& o) {
  topo::Topology t = topo::load(o.file);
  std::cout << o.file << ": valid collkit.topology/1, " << t.num_ranks() << " ranks on " << t.hosts().size() << " host(s), fingerprint "
            << t.fingerprint_hex() << "\n";
  return 0;
}

int run_presets(const Options&) {
  for (const auto& name : topo::list_node_presets()) {
    auto p = topo::load_node_preset(name);
    std::printf("%-14s %s\n", name.c_str(), p.description.c_str());
  }
  std::printf("\nfabrics: single-switch | fat-tree:rails=R,oversub=O[,leaf_radix=K,spines=S] | torus:dims=AxB[xC][,link_gbps=G]\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"coll-topo: discover, synthesise, import and inspect cluster topologies (collkit.topology/1)", "coll-topo"};
  app.require_subcommand(1);
  Options o;

  auto* discover = app.add_subcommand("discover", "this host (hwloc, CUDA/NVML, ibverbs); under mpirun/srun the whole cluster");
  discover->add_option("-o,--output", o.output, "topology file to write (default: stdout)");
  discover->add_option("--ranks-per-host", o.ranks_per_host, "ranks on a host without GPUs (default: one per core)")->check(CLI::NonNegativeNumber);
  discover->add_option("--fabric", o.fabric, "fabric joining several hosts, e.g. fat-tree:rails=8,oversub=1");
  discover->add_flag("--no-measure", o.no_measure,
                     "do not measure what hwloc does not state (a CPU's copy bandwidth without ACPI HMAT; 0.1-0.5 s)");

  auto* synth = app.add_subcommand("synth", "a synthetic cluster: a node preset times N joined by a fabric");
  synth->add_option("--node", o.node, "node preset, optionally with parameters: dgx-h100, pcie-8gpu:gpus=4 (see `coll-topo presets`)");
  synth->add_option("--nodes", o.nodes, "number of nodes")->check(CLI::PositiveNumber);
  synth->add_option("--fabric", o.fabric, "single-switch | fat-tree:rails=R,oversub=O | torus:dims=AxB[xC]");
  synth->add_option("-o,--output", o.output, "topology file to write (default: stdout)");

  auto* import = app.add_subcommand("import", "a foreign topology description");
  import->add_option("--nccl-xml", o.nccl_xml, "NCCL topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE)")->required();
  import->add_option("-o,--output", o.output, "topology file to write (default: stdout)");

  auto* show = app.add_subcommand("show", "summary and rank-by-rank matrix (nvidia-smi topo -m style), or Graphviz");
  show->add_option("file", o.file, "topology file")->required();
  show->add_flag("--dot", o.dot, "print Graphviz DOT instead (with --first/--count: the window's hosts and their switches)");
  show->add_flag("--no-matrix", o.no_matrix, "summary only");
  show->add_option_function<std::size_t>(
      "--first",
      [&o](std::size_t v) {
        o.first = v;
        o.first_given = true;
      },
      "first rank of the window (default 0)");
  show->add_option_function<std::size_t>(
      "--count",
      [&o](std::size_t v) {
        o.count = v;
        o.count_given = true;
      },
      "ranks in the window (default 16 for the matrix; --dot: all)");

  auto* validate = app.add_subcommand("validate", "check a topology file; non-zero exit with the reason when it is wrong");
  validate->add_option("file", o.file, "topology file")->required();

  auto* presets = app.add_subcommand("presets", "list the node presets and fabrics");

  return collkit::app::run<Options>(app, argc, argv, o,
                                    {{discover, run_discover}, {synth, run_synth},       {import, run_import},
                                     {show, run_show},         {validate, run_validate}, {presets, run_presets}});
}
