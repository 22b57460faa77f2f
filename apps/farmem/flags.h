// Flag helpers shared by the command files: sizes with units, the cluster and bench flags
// (harness/options.h), and flags whose value is one of a fixed set of names mapped to an
// enumeration (accepted spellings and error messages are CLI::IsMember's: "--op: scan not in
// {read,write,cas,faa,inc}").
// Thread safety: CLI11 set-up on the main thread.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "farmem/bench/harness/names.h"
#include "farmem/bench/harness/options.h"

namespace farmem::apps {

// A CLI11 transform that accepts sizes with units ("16MiB", "4k", "4096") for byte options.
CLI::Validator bytes_unit();

// --servers, --config and --down-nodes.
void add_cluster_flags(CLI::App* app, bench::ClusterOptions* options);

// The cluster flags and --threads --duration --warmup --seed --out.
void add_bench_flags(CLI::App* app, bench::BenchOptions* options, const std::string& duration_help);

// A flag (or positional) whose value is one of `names`; sets *value to the value it names.
template <typename T, typename E, size_t N>
CLI::Option* add_enum_option(CLI::App* app, const std::string& flag, T* value,
                             const bench::EnumNames<E, N>& names, const std::string& help) {
  return app
      ->add_option_function<std::string>(
          flag, [value, &names](const std::string& s) { *value = *bench::parse_name(names, s); },
          help)
      ->check(CLI::IsMember(bench::all_names(names)));
}

// A flag whose value is one of `choices`, stored as parse(value) (a Result of a library parser).
template <typename T, typename Parse>
CLI::Option* add_choice_option(CLI::App* app, const std::string& flag, T* value,
                               std::vector<std::string> choices, Parse parse,
                               const std::string& help) {
  return app
      ->add_option_function<std::string>(
          flag, [value, parse](const std::string& s) { *value = *parse(s); }, help)
      ->check(CLI::IsMember(std::move(choices)));
}

// An on|off flag.
CLI::Option* add_on_off_option(CLI::App* app, const std::string& flag, bool* value,
                               const std::string& help);
CLI::Option* add_on_off_option(CLI::App* app, const std::string& flag, std::optional<bool>* value,
                               const std::string& help);

}  // namespace farmem::apps
