#include "flags.h"

#include "farmem/common/units.h"

namespace farmem::apps {

CLI::Validator bytes_unit() {
  return CLI::Validator(
      [](std::string& text) {
        auto b = farmem::parse_bytes(text);
        if (!b.ok()) return std::string(b.status().message());
        text = std::to_string(*b);
        return std::string();
      },
      "SIZE");
}

void add_cluster_flags(CLI::App* app, bench::ClusterOptions* o) {
  app->add_option("--servers", o->servers, "memory nodes, host:port[,host:port...]");
  app->add_option("--config", o->config, "cluster TOML file ([[memnode]] address = ...)");
  app->add_option("--down-nodes", o->down_nodes,
                  "listed memory nodes known to be down, host:port=ID[,...] (not connected; "
                  "operations on them fail at once)");
}

void add_bench_flags(CLI::App* app, bench::BenchOptions* o, const std::string& duration_help) {
  add_cluster_flags(app, &o->cluster);
  app->add_option("--threads", o->threads, "client threads")->check(CLI::Range(1, 256));
  app->add_option("--duration", o->duration_s, duration_help)->check(CLI::Range(0.1, 86400.0));
  app->add_option("--warmup", o->warmup_s, "seconds run before the measurement (default 0)")
      ->check(CLI::Range(0.0, 86400.0));
  app->add_option("--seed", o->seed, "seed of every random choice, to replay a run")
      ->capture_default_str();
  app->add_option("--out", o->out, "append results to FILE.json or FILE.csv");
}

CLI::Option* add_on_off_option(CLI::App* app, const std::string& flag, bool* value,
                               const std::string& help) {
  return app
      ->add_option_function<std::string>(
          flag, [value](const std::string& s) { *value = s == "on"; }, help)
      ->check(CLI::IsMember({"on", "off"}));
}

CLI::Option* add_on_off_option(CLI::App* app, const std::string& flag, std::optional<bool>* value,
                               const std::string& help) {
  return app
      ->add_option_function<std::string>(
          flag, [value](const std::string& s) { *value = s == "on"; }, help)
      ->check(CLI::IsMember({"on", "off"}));
}

}  // namespace farmem::apps
