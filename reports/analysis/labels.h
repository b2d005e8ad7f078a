#pragma once
// How variants are named on screen: legends, tables, axis labels.
#include <string>
#include <vector>
#include "reports/db.h"

namespace cibench::reports {

// A harness label without the default settings: "int8 t2 w1 kv=preallocated isa=auto" ->
// "int8 t2 w1" (tables and axes; matching still uses the full label).
std::string compact_label(const std::string& label);

// The drafter as a legend shows it: a draft model by its file name without the extension
// ("draft:/models/stories260K.bin" -> "draft:stories260K"); the others as stored.
std::string drafter_name(const std::string& speculative);

// One setting of a variant as its name shows it: key is the variants column ("threads"),
// text what the name says ("t2").
struct NamePart {
  std::string key;
  std::string text;
  // A default shown only where it tells variants apart (colour_keys): "spec=off", which every
  // decoder row without a drafter stores, is left out of short_name.
  bool implicit = false;
};
// The settings Variant::short_name joins, in its order: format (the label when there is none)
// first, then recipe, sparsity, threads, workers, KV mode, ISA, shape, batch, cache, batching,
// prefix cache, speculative drafter and draft length, peer engine, and with_rate the offered rate
// of a stepped run. Defaults are left out ("kv=preallocated", "isa=auto", batching "none") or,
// for "spec=off", marked implicit.
std::vector<NamePart> name_parts(const Variant& v, bool with_rate = true);
// short_name without the settings in `keys` ({"speculative", "draft_tokens"}: the target build
// a drafter speeds up).
std::string name_without(const Variant& v, const std::vector<std::string>& keys, bool with_rate = true);

// What colours a trade-off chart's points: the format when the set holds more than one format
// (the report's colour per format), otherwise the settings that vary within it other than
// sparsity and cache, which the marker shows (the drafter and draft length of a speculative run,
// the batching of a batching sweep, the thread count of a scaling run); the format when nothing
// else varies. One key per variant, in order.
std::vector<std::string> colour_keys(const std::vector<const Variant*>& vs);

}  // namespace cibench::reports
