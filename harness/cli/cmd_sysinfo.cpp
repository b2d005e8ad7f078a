// cibench sysinfo [--json]: what this machine and build will record with every result.
#include <iostream>

#include "engines/core/cpu.h"
#include "engines/core/format.h"
#include "harness/cli/command.h"
#include "harness/lib/build_info.h"
#include "harness/lib/counters.h"
#include "harness/lib/sysinfo.h"

namespace cibench::cli {
namespace cmd_sysinfo {

RegisterCommand reg{Command{
    "sysinfo", "Show the machine, build, ISA levels, counters and knobs recorded with every result",
    [](CLI::App& sub) -> std::function<int()> {
      auto json = std::make_shared<bool>(false);
      sub.add_flag("--json", *json, "JSON on stdout");
      return [json]() {
        const SystemInfo s = collect_system_info();
        const BuildInfo& b = build_info();
        CounterPlan plan = default_counter_plan();
        const EnergyReading rapl = read_rapl();
        nlohmann::json j = s.to_json();
        j["build"] = {{"version", b.version}, {"commit", b.commit}, {"compiler", b.compiler},
                      {"cxx_flags", b.cxx_flags}, {"build_type", b.build_type}, {"sanitizer", b.sanitizer}};
        j["isa_supported"] = nlohmann::json::array();
        for (Isa i : supported_isas()) j["isa_supported"].push_back(isa_name(i));
        j["isa_cpu"] = nlohmann::json::array();
        for (Isa i : all_isas())
          if (cpu_has_isa(i)) j["isa_cpu"].push_back(isa_name(i));
        j["isa_ceiling"] = isa_name(isa_ceiling());
        j["isa_ceiling_source"] = isa_ceiling_source().empty() ? nlohmann::json("cpu") : nlohmann::json(isa_ceiling_source());
        j["formats"] = nlohmann::json::array();
        for (const auto& f : format_table()) j["formats"].push_back(f.name);
        j["counters"] = nlohmann::json::array();
        for (const auto& e : plan.entries)
          j["counters"].push_back({{"event", e.event},
                                   {"source", e.backend ? nlohmann::json(e.backend->name()) : nlohmann::json(nullptr)},
                                   {"unavailable_reason", e.backend ? nlohmann::json(nullptr) : nlohmann::json(e.reason)}});
        j["rapl"] = rapl.joules ? nlohmann::json{{"available", true}}
                                : nlohmann::json{{"available", false}, {"reason", rapl.reason}};
        if (*json) {
          std::cout << j.dump(2) << "\n";
          return 0;
        }
        auto knob = [](const Readable& r) { return r.value ? *r.value : "unknown (" + r.reason + ")"; };
        std::cout << "cibench   " << b.version << " " << b.commit << " (" << b.compiler << ", " << b.build_type << ", "
                  << b.cxx_flags << (b.sanitizer.empty() ? "" : ", sanitizer " + b.sanitizer) << ")\n"
                  << "host      " << s.hostname << "; " << s.kernel << "\n"
                  << "cpu       " << s.cpu_model << " (" << s.cpu_vendor << "), " << s.logical_cpus << " logical CPUs, "
                  << knob(s.physical_cores) << " physical cores\n"
                  << "flags     " << s.cpu_flags << "\n"
                  << "isa       active " << s.isa_active << ", best " << s.isa_best << ", supported:";
        for (Isa i : supported_isas()) std::cout << " " << isa_name(i);
        if (!isa_ceiling_source().empty()) {
          std::cout << " (capped by " << isa_ceiling_source() << "; the CPU has:";
          for (Isa i : all_isas())
            if (cpu_has_isa(i)) std::cout << " " << isa_name(i);
          std::cout << ")";
        }
        std::cout << "\nformats  ";
        for (const auto& f : format_table()) std::cout << " " << f.name;
        std::cout << "\nmemory    " << knob(s.mem_total_bytes) << " bytes\n"
                  << "governor  " << knob(s.governor) << "\nturbo     " << knob(s.turbo) << "\nsmt       " << knob(s.smt)
                  << "\nthp       " << knob(s.thp) << "\nrapl      " << (rapl.joules ? "readable" : rapl.reason) << "\ncounters\n";
        for (const auto& e : plan.entries)
          std::cout << "  " << e.event << ": " << (e.backend ? e.backend->name() : "unavailable: " + e.reason) << "\n";
        for (const auto& w : s.warnings) std::cout << "warning: " << w << "\n";
        return 0;
      };
    }}};

}  // namespace cmd_sysinfo
}  // namespace cibench::cli
