// Rule file parsing with yaml-cpp; checks as model/rulefmt in Prometheus 2.42.
#include "rules/rule_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/yaml_error.h"
#include "base/yaml_keys.h"
#include "promql/parser.h"
#include "rules/template.h"

namespace gw::rules {
namespace {

std::string Pos(const YAML::Node& n) {
  return std::to_string(n.Mark().line + 1) + ":" + std::to_string(n.Mark().column + 1);
}

// model.ParseDuration: units y w d h m s ms, largest first; a bare "0" is allowed.
bool ParseModelDuration(const std::string& s, int64_t* ms) {
  if (s == "0") {
    *ms = 0;
    return true;
  }
  if (s.empty() || s.find_first_not_of("0123456789") == std::string::npos) return false;
  if (s.find('.') != std::string::npos) return false;
  return promql::ParsePromDuration(s, ms);
}

class FileParser {
 public:
  explicit FileParser(std::string path) : path_(std::move(path)) {}

  Expected<RuleFile> Run(std::string_view text) {
    RuleFile file;
    file.path = path_;
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      return Error{path_ + ":" + std::to_string(e.mark.line + 1) + ":" +
                   std::to_string(e.mark.column + 1) + ": yaml: " + YamlErrorMessage(e)};
    }
    // Like promtool (go-yaml's strict decoding), in its words: a key given twice in one mapping
    // is an error, every repetition listed, before anything else is checked.
    if (std::vector<std::string> dups = GoYamlDuplicateKeyErrors(text); !dups.empty()) {
      std::string msg = path_ + ": yaml: unmarshal errors:";
      for (const std::string& d : dups) msg += "\n  " + d;
      return Error{msg};
    }
    if (root.IsNull()) return file;
    if (!root.IsMap())
      return Error{path_ + ":" + Pos(root) + ": yaml: expected a mapping with 'groups'"};
    // A key that is not a string (a mapping or a list as key) makes yaml-cpp throw while the
    // file is walked; that is an error in the file, never a crash of `rules check` or `serve`.
    try {
      return Walk(root, &file);
    } catch (const YAML::Exception& e) {
      return Error{path_ + ":" + std::to_string(e.mark.line + 1) + ":" +
                   std::to_string(e.mark.column + 1) + ": yaml: " + YamlErrorMessage(e)};
    }
  }

 private:
  Expected<RuleFile> Walk(const YAML::Node& root, RuleFile* out) {
    RuleFile& file = *out;
    for (const auto& item : root) {
      std::string key = item.first.as<std::string>();
      if (key != "groups")
        Add(item.first, "field " + key + " not found in type rulefmt.RuleGroups");
    }
    YAML::Node groups = root["groups"];
    if (groups && !groups.IsNull()) {
      if (!groups.IsSequence()) {
        Add(groups, "groups: expected a list");
      } else {
        std::set<std::string> names;
        for (const YAML::Node& g : groups) ParseGroup(g, &names, &file);
      }
    }
    if (!errors_.empty()) {
      std::string msg;
      for (size_t i = 0; i < errors_.size(); ++i) msg += (i ? "\n" : "") + errors_[i];
      return Error{msg};
    }
    return file;
  }

  void Add(const YAML::Node& at, const std::string& msg) {
    errors_.push_back(path_ + ":" + Pos(at) + ": " + msg);
  }
  void AddAt(const YAML::Mark& m, const std::string& msg) {
    errors_.push_back(path_ + ":" + std::to_string(m.line + 1) + ":" +
                      std::to_string(m.column + 1) + ": " + msg);
  }

  bool Scalar(const YAML::Node& n, const std::string& what, std::string* out) {
    if (!n.IsScalar()) {
      Add(n, what + ": expected a string");
      return false;
    }
    *out = n.Scalar();
    return true;
  }

  void ParseGroup(const YAML::Node& g, std::set<std::string>* names, RuleFile* file) {
    if (!g.IsMap()) {
      Add(g, "group: expected a mapping");
      return;
    }
    GroupSpec spec;
    spec.line = g.Mark().line + 1;
    for (const auto& item : g) {
      std::string key = item.first.as<std::string>();
      const YAML::Node& v = item.second;
      if (key == "name") {
        Scalar(v, "name", &spec.name);
      } else if (key == "interval") {
        std::string s;
        if (Scalar(v, "interval", &s) && !ParseModelDuration(s, &spec.interval_ms))
          Add(v, "not a valid duration string: \"" + s + "\"");
      } else if (key == "limit") {
        try {
          spec.limit = v.as<int>();
        } catch (const YAML::Exception&) {
          Add(v, "cannot unmarshal " + v.Scalar() + " into int");
        }
      } else if (key != "rules") {
        Add(item.first, "field " + key + " not found in type rulefmt.RuleGroup");
      }
    }
    if (spec.name.empty()) {
      Add(g, "Groupname must not be empty");
    } else if (!names->insert(spec.name).second) {
      Add(g["name"], "groupname: \"" + spec.name + "\" is repeated in the same file");
    }
    YAML::Node rules = g["rules"];
    if (rules && !rules.IsNull()) {
      if (!rules.IsSequence()) {
        Add(rules, "rules: expected a list");
      } else {
        int index = 0;
        for (const YAML::Node& r : rules) ParseRule(r, spec.name, ++index, &spec);
      }
    }
    file->groups.push_back(std::move(spec));
  }

  bool ParseMap(const YAML::Node& n, const std::string& what, tsdb::Labels* out) {
    if (n.IsNull()) return true;
    if (!n.IsMap()) {
      Add(n, what + ": expected a mapping");
      return false;
    }
    for (const auto& item : n) {
      std::string v;
      if (!item.second.IsNull() && !Scalar(item.second, what, &v)) return false;
      out->push_back({item.first.as<std::string>(), v});
      marks_[what + "/" + out->back().name] =
          item.second.IsNull() ? item.first.Mark() : item.second.Mark();
    }
    std::sort(out->begin(), out->end());
    return true;
  }

  void ParseRule(const YAML::Node& r, const std::string& group, int index, GroupSpec* g) {
    if (!r.IsMap()) {
      Add(r, "rule: expected a mapping");
      return;
    }
    RuleSpec spec;
    spec.line = r.Mark().line + 1;
    YAML::Node record_node, alert_node, expr_node;
    for (const auto& item : r) {
      std::string key = item.first.as<std::string>();
      const YAML::Node& v = item.second;
      if (key == "record") {
        record_node = v;
        Scalar(v, key, &spec.record);
      } else if (key == "alert") {
        alert_node = v;
        Scalar(v, key, &spec.alert);
      } else if (key == "expr") {
        expr_node = v;
        Scalar(v, key, &spec.expr);
      } else if (key == "for" || key == "keep_firing_for") {
        std::string s;
        int64_t* out = key == "for" ? &spec.for_ms : &spec.keep_firing_for_ms;
        if (Scalar(v, key, &s) && !ParseModelDuration(s, out))
          Add(v, "not a valid duration string: \"" + s + "\"");
      } else if (key == "labels") {
        ParseMap(v, key, &spec.labels);
      } else if (key == "annotations") {
        ParseMap(v, key, &spec.annotations);
      } else {
        Add(item.first, "field " + key + " not found in type rulefmt.RuleNode");
      }
    }
    std::string prefix = "group \"" + group + "\", rule " + std::to_string(index) + ", \"" +
                         (spec.alert.empty() ? spec.record : spec.alert) + "\": ";
    auto fail = [&](const YAML::Node& at, const std::string& msg) {
      Add(at && !at.Mark().is_null() ? at : r, prefix + msg);
    };
    auto fail_at = [&](const std::string& key, const std::string& msg) {
      auto m = marks_.find(key);
      if (m == marks_.end()) return fail(r, msg);
      AddAt(m->second, prefix + msg);
    };
    if (!spec.record.empty() && !spec.alert.empty())
      fail(record_node, "only one of 'record' and 'alert' must be set");
    if (spec.record.empty() && spec.alert.empty())
      fail(record_node ? record_node : alert_node, "one of 'record' or 'alert' must be set");
    if (spec.expr.empty()) {
      fail(expr_node, "field 'expr' must be set in rule");
    } else if (auto e = promql::Parse(spec.expr); !e.ok()) {
      fail(expr_node, "could not parse expression: " + e.error().message);
    }
    if (!spec.record.empty()) {
      if (!spec.annotations.empty())
        fail(r["annotations"], "invalid field 'annotations' in recording rule");
      if (spec.for_ms != 0) fail(r["for"], "invalid field 'for' in recording rule");
      if (spec.keep_firing_for_ms != 0)
        fail(r["keep_firing_for"], "invalid field 'keep_firing_for' in recording rule");
      if (!tsdb::IsValidMetricName(spec.record))
        fail(record_node, "invalid recording rule name: " + spec.record);
    }
    for (const auto& l : spec.labels) {
      if (!tsdb::IsValidLabelName(l.name) || l.name == "__name__")
        fail_at("labels/" + l.name, "invalid label name: " + l.name);
    }
    for (const auto& a : spec.annotations)
      if (!tsdb::IsValidLabelName(a.name))
        fail_at("annotations/" + a.name, "invalid annotation name: " + a.name);
    if (!spec.alert.empty()) {
      for (const auto& l : spec.labels)
        if (Status s = CheckTemplate("__alert_" + spec.alert, l.value); !s.ok())
          fail_at("labels/" + l.name, "label \"" + l.name + "\": " + s.message());
      for (const auto& a : spec.annotations)
        if (Status s = CheckTemplate("__alert_" + spec.alert, a.value); !s.ok())
          fail_at("annotations/" + a.name, "annotation \"" + a.name + "\": " + s.message());
    }
    g->rules.push_back(std::move(spec));
  }

  std::string path_;
  std::vector<std::string> errors_;
  std::map<std::string, YAML::Mark> marks_;  // "labels/NAME", "annotations/NAME" → value mark
};

}  // namespace

Expected<RuleFile> ParseRuleText(std::string_view text, const std::string& path) {
  return FileParser(path).Run(text);
}

Expected<RuleFile> ParseRuleFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot read the file"};
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseRuleText(ss.str(), path);
}

}  // namespace gw::rules
