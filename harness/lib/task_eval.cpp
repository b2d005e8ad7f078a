#include "harness/lib/task_eval.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

namespace cibench {
namespace {

using Clock = std::chrono::steady_clock;

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// Python's str.capitalize() for ASCII: the first character upper case, the rest lower case.
std::string capitalize(const std::string& s) {
  std::string out = s;
  for (size_t i = 0; i < out.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(out[i]);
    out[i] = static_cast<char>(i == 0 ? std::toupper(c) : std::tolower(c));
  }
  return out;
}

// log softmax(logits)[token], in double.
double log_prob(const float* logits, int vocab, int token) {
  float mx = logits[0];
  for (int i = 1; i < vocab; ++i) mx = std::max(mx, logits[i]);
  double sum = 0;
  for (int i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  return static_cast<double>(logits[token]) - mx - std::log(sum);
}

int argmax(const float* logits, int vocab) {
  return static_cast<int>(std::max_element(logits, logits + vocab) - logits);
}

// `tail[k]`: choice k's summed log-probability of its tokens after the shared ones, `tail_n[k]`
// their number.
void pick(ChoiceScores& s, const TaskItem& item, const std::vector<double>& tail, const std::vector<size_t>& tail_n) {
  double best = -std::numeric_limits<double>::infinity(), best_norm = best, best_tok = best;
  for (size_t k = 0; k < s.loglik.size(); ++k) {
    const double norm = s.loglik[k] / static_cast<double>(std::max<size_t>(1, item.choices[k].size()));
    if (s.loglik[k] > best) best = s.loglik[k], s.chosen = static_cast<int>(k);
    if (norm > best_norm) best_norm = norm, s.chosen_norm = static_cast<int>(k);
    const double per_token = tail_n[k] ? tail[k] / static_cast<double>(tail_n[k]) : -std::numeric_limits<double>::infinity();
    if (per_token > best_tok || s.chosen_per_token < 0) best_tok = per_token, s.chosen_per_token = static_cast<int>(k);
  }
}

const std::string& str_field(const nlohmann::json& j, const char* key, const std::string& at) {
  auto it = j.find(key);
  if (it == j.end()) throw TaskError(str(at, ": no \"", key, "\""));
  if (!it->is_string()) throw TaskError(str(at, ": \"", key, "\" is ", it->type_name(), ", expected a string"));
  return it->get_ref<const std::string&>();
}

std::vector<std::string> str_list(const nlohmann::json& j, const char* key, const std::string& at, bool required) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) throw TaskError(str(at, ": no \"", key, "\""));
    return out;
  }
  if (!it->is_array()) throw TaskError(str(at, ": \"", key, "\" is ", it->type_name(), ", expected a list of strings"));
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string())
      throw TaskError(str(at, ": \"", key, "\"[", i, "] is ", (*it)[i].type_name(), ", expected a string"));
    out.push_back((*it)[i].get<std::string>());
  }
  return out;
}

int answer_field(const nlohmann::json& j, const char* key, const std::string& at) {
  auto it = j.find(key);
  if (it == j.end()) throw TaskError(str(at, ": no \"", key, "\""));
  if (it->is_number_integer()) return it->get<int>();
  if (it->is_string()) {  // HellaSwag stores its label as "0".."3"
    const std::string& s = it->get_ref<const std::string&>();
    if (!s.empty() && s.size() < 9 && s.find_first_not_of("0123456789") == std::string::npos) return std::stoi(s);
  }
  throw TaskError(str(at, ": \"", key, "\" is ", it->dump(), ", expected a choice index (0, 1, ...)"));
}

void check_choices(const TaskItem& item, const std::string& at, const char* field, const char* answer_key) {
  if (item.choices.size() < 2) throw TaskError(str(at, ": \"", field, "\" has ", item.choices.size(), " choices, at least 2 needed"));
  for (size_t k = 0; k < item.choices.size(); ++k)
    if (trim(item.choices[k]).empty()) throw TaskError(str(at, ": \"", field, "\"[", k, "] is empty"));
  if (item.answer < 0 || item.answer >= static_cast<int>(item.choices.size()))
    throw TaskError(str(at, ": \"", answer_key, "\" is ", item.answer, ", outside the ", item.choices.size(), " choices (0 to ",
                        item.choices.size() - 1, ")"));
}

}  // namespace

const char* task_kind_name(TaskKind k) { return k == TaskKind::multiple_choice ? "multiple_choice" : "generation"; }

std::string hellaswag_preprocess(const std::string& text) {
  std::string s = trim(text);
  s = replace_all(s, " [title]", ". ");
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {  // re.sub("\\[.*?\\]", "", text)
    if (s[i] == '[') {
      const size_t close = s.find(']', i);
      if (close != std::string::npos) {
        i = close;
        continue;
      }
    }
    out += s[i];
  }
  return replace_all(out, "  ", " ");
}

std::string normalize_answer(const std::string& text) {
  std::string out;
  bool space = false;
  for (char ch : trim(text)) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (std::isspace(c)) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += static_cast<char>(std::tolower(c));
  }
  return out;
}

TaskSet read_task_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TaskError(str(path, ": cannot read the task file"));
  std::ostringstream os;
  os << in.rdbuf();
  return parse_task_text(os.str(), path);
}

TaskSet parse_task_text(const std::string& text, const std::string& path) {
  TaskSet set;
  set.path = path;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (trim(line).empty()) continue;
    const std::string at = str(path, ":", n);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw TaskError(str(at, ": not a JSON object (", e.what(), ")"));
    }
    if (!j.is_object()) throw TaskError(str(at, ": a ", j.type_name(), ", expected a JSON object per line"));
    TaskItem item;
    item.line = n;
    std::string format;
    if (j.contains("endings")) {  // HellaSwag's own JSONL
      format = "hellaswag";
      const std::string ctx = str_field(j, "ctx_a", at) + " " + capitalize(str_field(j, "ctx_b", at));
      const std::string label = j.contains("activity_label") ? str_field(j, "activity_label", at) : std::string();
      item.context = hellaswag_preprocess(label.empty() ? ctx : label + ": " + ctx);
      for (const auto& e : str_list(j, "endings", at, true)) item.choices.push_back(hellaswag_preprocess(e));
      item.answer = answer_field(j, "label", at);
      check_choices(item, at, "endings", "label");
    } else if (j.contains("choices")) {
      format = "cibench-mc";
      item.context = str_field(j, "context", at);
      item.choices = str_list(j, "choices", at, true);
      item.answer = answer_field(j, "answer", at);
      check_choices(item, at, "choices", "answer");
    } else if (j.contains("prompt") || j.contains("target")) {
      format = "cibench-gen";
      item.prompt = str_field(j, "prompt", at);
      item.target = str_field(j, "target", at);
      item.stop = str_list(j, "stop", at, false);
      if (trim(item.target).empty()) throw TaskError(str(at, ": \"target\" is empty"));
      for (size_t k = 0; k < item.stop.size(); ++k)
        if (item.stop[k].empty()) throw TaskError(str(at, ": \"stop\"[", k, "] is empty"));
    } else {
      throw TaskError(str(at, ": neither a multiple-choice item (\"context\", \"choices\", \"answer\"), a HellaSwag item "
                          "(\"ctx_a\", \"ctx_b\", \"endings\", \"label\") nor a generation item (\"prompt\", \"target\")"));
    }
    if (format != "cibench-gen" && trim(item.context).empty()) throw TaskError(str(at, ": the context is empty"));
    if (set.items.empty()) {
      set.format = format;
      set.kind = format == "cibench-gen" ? TaskKind::generation : TaskKind::multiple_choice;
    } else if (format != set.format) {
      throw TaskError(str(at, ": a ", format, " item in a file of ", set.format, " items (line ", set.items.front().line,
                          "); one kind per file"));
    }
    set.items.push_back(std::move(item));
  }
  if (set.items.empty()) throw TaskError(str(path, ": no items (an empty task file)"));
  return set;
}

EncodedItem encode_item(const Tokenizer& tok, const TaskItem& item) {
  EncodedItem e;
  // lm-eval's _encode_pair: trailing spaces of the context move to the continuation.
  std::string context = item.context;
  const size_t keep = context.find_last_not_of(' ');
  const std::string moved = keep == std::string::npos ? context : context.substr(keep + 1);
  context.resize(context.size() - moved.size());
  e.context = tok.encode(context, true, false);
  for (const auto& choice : item.choices) {
    const std::vector<int> whole = tok.encode(context + moved + " " + choice, true, false);
    std::vector<int> cont;
    if (whole.size() > e.context.size()) cont.assign(whole.begin() + static_cast<std::ptrdiff_t>(e.context.size()), whole.end());
    e.continuations.push_back(std::move(cont));
  }
  // The tokens every choice's continuation starts with.
  if (!e.continuations.empty()) {
    size_t n = e.continuations[0].size();
    for (const auto& c : e.continuations) {
      size_t i = 0;
      while (i < n && i < c.size() && c[i] == e.continuations[0][i]) ++i;
      n = i;
    }
    e.shared = n;
  }
  return e;
}

std::vector<std::string> task_metrics(TaskKind k) {
  if (k == TaskKind::multiple_choice) return {"acc_norm", "acc", "acc_per_token"};
  return {"exact_match", "contains"};
}

std::string join_metrics(const std::vector<std::string>& metrics) {
  std::string out;
  for (const auto& m : metrics) out += (out.empty() ? "" : ", ") + m;
  return out;
}

std::vector<int> TaskScores::correct(const std::string& metric, const TaskSet& set) const {
  std::vector<int> out;
  if (kind == TaskKind::multiple_choice) {
    if (metric != "acc" && metric != "acc_norm" && metric != "acc_per_token")
      throw TaskError(str(set.path, ": metric '", metric,
                          "' is not one of a multiple-choice task's (acc_norm, acc, acc_per_token)"));
    for (size_t i = 0; i < mc.size(); ++i) {
      const int c = metric == "acc" ? mc[i].chosen : metric == "acc_norm" ? mc[i].chosen_norm : mc[i].chosen_per_token;
      out.push_back(c == set.items.at(i).answer);
    }
  } else {
    if (metric != "exact_match" && metric != "contains")
      throw TaskError(str(set.path, ": metric '", metric, "' is not one of a generation task's (exact_match, contains)"));
    for (const auto& g : gen) out.push_back(metric == "exact_match" ? g.exact : g.contains);
  }
  return out;
}

double TaskScores::items_per_s() const {
  const size_t n = kind == TaskKind::multiple_choice ? mc.size() : gen.size();
  return seconds > 0 ? static_cast<double>(n) / seconds : 0;
}

namespace {

void check_fits(const TaskSet& set, const TaskItem& item, size_t need, int limit, const char* what) {
  if (need > static_cast<size_t>(limit))
    throw TaskError(str(set.path, ":", item.line, ": ", what, " are ", need, " tokens; the model's context holds ", limit));
}

}  // namespace

TaskScores score_task(const LlamaModel& model, const SessionOptions& opts, const Tokenizer& tok, const TaskSet& set,
                      int max_new_tokens, const TaskProgress& progress) {
  TaskScores out;
  out.kind = set.kind;
  LlamaSession s(model, opts);
  const int vocab = model.config.vocab_size;
  const auto t0 = Clock::now();
  std::vector<float> first(static_cast<size_t>(vocab));
  for (size_t i = 0; i < set.items.size(); ++i) {
    const TaskItem& item = set.items[i];
    s.reset();
    if (set.kind == TaskKind::multiple_choice) {
      const EncodedItem e = encode_item(tok, item);
      size_t longest = 0;
      for (size_t k = 0; k < e.continuations.size(); ++k) {
        if (e.continuations[k].empty())
          throw TaskError(str(set.path, ":", item.line, ": choice ", k, " adds no tokens to the context"));
        longest = std::max(longest, e.continuations[k].size());
      }
      check_fits(set, item, e.context.size() + longest, s.context_limit(), "the context and its longest choice");
      const float* l = s.prefill(e.context.data(), static_cast<int>(e.context.size()));
      std::copy(l, l + vocab, first.begin());
      out.tokens += static_cast<int64_t>(e.context.size());
      const int ctx = s.position();
      ChoiceScores cs;
      std::vector<double> tail;
      std::vector<size_t> tail_n;
      for (const auto& cont : e.continuations) {
        double lp = log_prob(first.data(), vocab, cont[0]);
        double ll = lp, t = e.shared == 0 ? lp : 0;
        const int m = static_cast<int>(cont.size());
        if (m > 1) {
          const float* rows = s.verify(cont.data(), m - 1);
          for (int j = 0; j + 1 < m; ++j) {
            lp = log_prob(rows + static_cast<size_t>(j) * vocab, vocab, cont[j + 1]);
            ll += lp;
            if (static_cast<size_t>(j + 1) >= e.shared) t += lp;
          }
          out.tokens += m - 1;
          s.rewind(ctx);
        }
        cs.loglik.push_back(ll);
        tail.push_back(t);
        tail_n.push_back(cont.size() > e.shared ? cont.size() - e.shared : 0);
      }
      pick(cs, item, tail, tail_n);
      out.mc.push_back(std::move(cs));
    } else {
      const std::vector<int> p = tok.encode(item.prompt, true, false);
      check_fits(set, item, p.size() + static_cast<size_t>(max_new_tokens), s.context_limit(),
                 "the prompt and max_new_tokens");
      const float* l = s.prefill(p.data(), static_cast<int>(p.size()));
      out.tokens += static_cast<int64_t>(p.size());
      GenerationResult g;
      int prev = p.back();
      for (int t = 0; t < max_new_tokens; ++t) {
        const int next = argmax(l, vocab);
        if (next == tok.eos_id()) break;
        g.output += tok.decode(prev, next);
        prev = next;
        // Stop strings are looked for after the output's leading white space (" " as a stop ends
        // the first word, not the leading space a word piece carries).
        const size_t from = g.output.find_first_not_of(" \t\n");
        size_t cut = std::string::npos;
        if (from != std::string::npos)
          for (const auto& st : item.stop) cut = std::min(cut, g.output.find(st, from));
        if (cut != std::string::npos) {
          g.output.resize(cut);
          break;
        }
        if (t + 1 < max_new_tokens) {
          l = s.step(next);
          ++out.tokens;
        }
      }
      const std::string o = normalize_answer(g.output), want = normalize_answer(item.target);
      g.exact = o == want;
      g.contains = !want.empty() && o.find(want) != std::string::npos;
      out.gen.push_back(std::move(g));
    }
    if (progress) progress(i + 1, set.items.size());
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

TaskScores score_naive(const LlamaModel& model, const SessionOptions& opts, const Tokenizer& tok, const TaskSet& set) {
  if (set.kind != TaskKind::multiple_choice) return score_task(model, opts, tok, set);
  TaskScores out;
  out.kind = set.kind;
  LlamaSession s(model, opts);
  const int vocab = model.config.vocab_size;
  const auto t0 = Clock::now();
  std::vector<float> logits;
  for (const TaskItem& item : set.items) {
    const EncodedItem e = encode_item(tok, item);
    ChoiceScores cs;
    std::vector<double> tail;
    std::vector<size_t> tail_n;
    for (const auto& cont : e.continuations) {
      std::vector<int> seq = e.context;
      seq.insert(seq.end(), cont.begin(), cont.end());
      check_fits(set, item, seq.size(), s.context_limit(), "the context and a choice");
      s.reset();
      logits.resize(seq.size() * static_cast<size_t>(vocab));
      s.forward_all(seq.data(), static_cast<int>(seq.size()), logits.data());
      out.tokens += static_cast<int64_t>(seq.size());
      double ll = 0, t = 0;
      for (size_t j = 0; j < cont.size(); ++j) {
        const double lp = log_prob(logits.data() + (e.context.size() - 1 + j) * static_cast<size_t>(vocab), vocab, cont[j]);
        ll += lp;
        if (j >= e.shared) t += lp;
      }
      cs.loglik.push_back(ll);
      tail.push_back(t);
      tail_n.push_back(cont.size() > e.shared ? cont.size() - e.shared : 0);
    }
    pick(cs, item, tail, tail_n);
    out.mc.push_back(std::move(cs));
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

double mcnemar_exact_p(int64_t b, int64_t c) {
  const int64_t n = b + c;
  if (n == 0) return 1;
  const int64_t k = std::min(b, c);
  // P(X <= k) for X ~ Binomial(n, 1/2), summed in log space.
  double acc = 0;
  const double ln2n = static_cast<double>(n) * std::log(2.0);
  for (int64_t i = 0; i <= k; ++i)
    acc += std::exp(std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(i) + 1) -
                    std::lgamma(static_cast<double>(n - i) + 1) - ln2n);
  return std::min(1.0, 2 * acc);
}

TaskStats task_stats(const std::vector<int>& correct, const std::vector<int>& reference_correct,
                     const BootstrapOptions& boot) {
  if (correct.empty()) throw TaskError("task accuracy of no items");
  if (!reference_correct.empty() && reference_correct.size() != correct.size())
    throw TaskError(str("task accuracy: ", correct.size(), " items scored, the reference has ", reference_correct.size()));
  TaskStats t;
  const std::vector<int> gold(correct.size(), 1);
  t.stats = classifier_stats(correct, gold, reference_correct, boot);
  for (size_t i = 0; i < reference_correct.size(); ++i) {
    t.b += correct[i] && !reference_correct[i];
    t.c += !correct[i] && reference_correct[i];
  }
  t.mcnemar_p = mcnemar_exact_p(t.b, t.c);
  return t;
}

}  // namespace cibench
