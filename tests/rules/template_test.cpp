// Template expansion. Expected strings are what promtool 2.42 produced for the same templates
// (see testdata/pass_templates_test.yml, recorded from a promtool run).
#include <gtest/gtest.h>

#include <cmath>

#include "rules/template.h"

namespace gw::rules {
namespace {

std::string Expand(const std::string& text, double value = 0.5, TemplateContext ctx = {}) {
  TemplateData d;
  d.labels = {{"__name__", "up"}, {"instance", "h:9"}, {"job", "a"}};
  d.external_labels = {{"cluster", "prod"}};
  d.external_url = "http://prom.example:9090";
  d.value = value;
  auto r = ExpandAlertTemplate("__alert_A", text, d, ctx);
  return r.ok() ? *r : "ERR: " + r.error().message;
}

TEST(GoFormat, FloatsPrintAsGo) {
  EXPECT_EQ(FormatGoFloat(0.5, 'v'), "0.5");
  EXPECT_EQ(FormatGoFloat(1e6, 'v'), "1e+06");
  EXPECT_EQ(FormatGoFloat(123456, 'v'), "123456");
  EXPECT_EQ(FormatGoFloat(1234567.5, 'v'), "1.2345675e+06");
  EXPECT_EQ(FormatGoFloat(0.0001, 'v'), "0.0001");
  EXPECT_EQ(FormatGoFloat(0.00001, 'v'), "1e-05");
  EXPECT_EQ(FormatGoFloat(90, 'v'), "90");
  EXPECT_EQ(FormatGoFloat(1, 'E'), "1E+00");
  EXPECT_EQ(FormatGoFloat(0.5, 'E'), "5E-01");
  EXPECT_EQ(FormatGoFloat(1.5, 'e'), "1.5e+00");
  EXPECT_EQ(FormatGoFloat(NAN, 'v'), "NaN");
  EXPECT_EQ(FormatGoFloat(-INFINITY, 'v'), "-Inf");
}

TEST(Humanize, MatchesPrometheus) {
  EXPECT_EQ(Humanize(1234567), "1.235M");
  EXPECT_EQ(Humanize(0.00123), "1.23m");
  EXPECT_EQ(Humanize(0.0042), "4.2m");
  EXPECT_EQ(Humanize(123), "123");
  EXPECT_EQ(Humanize(0), "0");
  EXPECT_EQ(Humanize1024(2048), "2ki");
  EXPECT_EQ(Humanize1024(1234567.5), "1.177Mi");
  EXPECT_EQ(HumanizeDuration(3725.5), "1h 2m 5s");
  EXPECT_EQ(HumanizeDuration(1234567.5), "14d 6h 56m 7s");
  EXPECT_EQ(HumanizeDuration(0.0042), "4.2ms");
  EXPECT_EQ(HumanizeDuration(123), "2m 3s");
  EXPECT_EQ(HumanizeDuration(0), "0s");
  EXPECT_EQ(HumanizeTimestamp(1600000000.5), "2020-09-13 12:26:40.5 +0000 UTC");
  EXPECT_EQ(HumanizeTimestamp(123), "1970-01-01 00:02:03 +0000 UTC");
}

// Found by the template fuzz target: a value past int64's range was converted with a plain cast
// (undefined behaviour, UBSan aborts). Such values now saturate instead.
TEST(Humanize, HugeValuesSaturate) {
  EXPECT_EQ(HumanizeDuration(1e300).rfind("106751991167300d ", 0), 0u);
  EXPECT_EQ(HumanizeDuration(-1e300).rfind("-106751991167300d ", 0), 0u);
  EXPECT_FALSE(HumanizeTimestamp(1e300).empty());
  EXPECT_FALSE(HumanizeTimestamp(-1e300).empty());
  EXPECT_EQ(HumanizeDuration(9.3e18).rfind("106751991167300d ", 0), 0u);
}

TEST(Template, ValuesAndLabels) {
  EXPECT_EQ(Expand("{{ $value }}"), "0.5");
  EXPECT_EQ(Expand("{{ .Value }}", 1e6), "1e+06");
  EXPECT_EQ(Expand("{{ $labels.job }} {{ .Labels.instance | stripPort }}"), "a h");
  EXPECT_EQ(Expand("{{ $labels.missing }}|"), "|");
  EXPECT_EQ(Expand("{{ $labels }}"), "map[__name__:up instance:h:9 job:a]");
  EXPECT_EQ(Expand("{{ $externalLabels.cluster }} {{ $externalURL }}"),
            "prod http://prom.example:9090");
}

TEST(Template, ControlFlowAndFunctions) {
  EXPECT_EQ(
      Expand("{{ if gt $value 100.0 }}big{{ else if gt $value 0.1 }}mid{{ else }}small{{ end }}"),
      "mid");
  EXPECT_EQ(Expand("{{ $x := 5 }}{{ $x }}{{ $x = 7 }}{{ $x }}"), "57");
  EXPECT_EQ(Expand("a  {{- 1 -}}  b {{/* c */}}c"), "a1b c");
  EXPECT_EQ(Expand("{{ with $labels.nope }}x{{ else }}none{{ end }}"), "none");
  EXPECT_EQ(
      Expand("{{ and true 1 }}|{{ or 0 \"\" \"x\" }}|{{ not false }}|{{ eq \"a\" \"b\" \"a\" }}"),
      "1|x|true|true");
  EXPECT_EQ(
      Expand("{{ printf \"%.2f|%d|%s|%v|%q|%x|%g|%e|%5.1f|%-4s|\" 3.14159 42 \"str\" 1.5 \"q\" 255 "
             "0.000001 1234567.5 3.14159 \"ab\" }}"),
      "3.14|42|str|1.5|\"q\"|ff|1e-06|1.234568e+06|  3.1|ab  |");
  EXPECT_EQ(Expand("{{ printf \"%d\" 1.5 }}|{{ printf \"%s\" }}"), "%!d(float64=1.5)|%!s(MISSING)");
  // Found by tests/fuzz (template): a width past int's range overflowed (undefined behaviour;
  // "%4294967296d" padded to width 0, longer ones to gigabytes). Go gives up past 1e6.
  EXPECT_EQ(Expand("{{ printf \"%4294967296d|\" 1 }}"), "%!(NOVERB)%!(EXTRA int=1)");
  EXPECT_EQ(Expand("{{ printf \"%.4294967296f\" 1.5 }}"), "%!(NOVERB)%!(EXTRA float64=1.5)");
  EXPECT_EQ(Expand("{{ printf \"%3d|%-3d|\" 1 2 }}"), "  1|2  |");
  EXPECT_EQ(Expand("{{ toUpper \"abc\" }}|{{ title \"hello world\" }}|{{ reReplaceAll \"(a+)b\" "
                   "\"${1}X\" \"aab cab\" }}"),
            "ABC|Hello World|aaX caX");
  EXPECT_EQ(Expand("{{ match \"^a.c$\" \"abc\" }}|{{ parseDuration \"1h30m\" }}|{{ "
                   "humanizePercentage 0.1234 }}"),
            "true|5400|12.34%");
  EXPECT_EQ(Expand("{{ with args 1 \"two\" }}{{ .arg0 }} {{ .arg1 }} {{ .arg2 }}{{ end }}"),
            "1 two <no value>");
  EXPECT_EQ(Expand("{{ len .Labels }} {{ index .Labels \"job\" }}"), "3 a");
}

// Go's html and urlquery (text/template's HTMLEscapeString and url.QueryEscape).
TEST(Template, HtmlAndUrlqueryEscapeAsGo) {
  EXPECT_EQ(Expand("{{ html \"<a href=\\\"x\\\">'&'</a>\" }}"),
            "&lt;a href=&#34;x&#34;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(Expand("{{ urlquery \"a b&c=d/é\" }}"), "a+b%26c%3Dd%2F%C3%A9");
}

TEST(Template, QueryFunctions) {
  TemplateContext ctx;
  ctx.query = [](const std::string& q) -> Expected<std::vector<QuerySample>> {
    if (q == "none") return std::vector<QuerySample>{};
    if (q == "bad") return Error{"1:5: parse error: unclosed left parenthesis"};
    return std::vector<QuerySample>{{{{"kind", "b"}}, 2.5}, {{{"kind", "a"}}, 1}};
  };
  EXPECT_EQ(Expand("{{ range query \"x\" }}{{ .Labels.kind }}={{ .Value }};{{ end }}", 0, ctx),
            "b=2.5;a=1;");
  EXPECT_EQ(Expand("{{ range sortByLabel \"kind\" (query \"x\") }}{{ label \"kind\" . }}{{ end }}",
                   0, ctx),
            "ab");
  EXPECT_EQ(Expand("{{ query \"x\" | first | value }}", 0, ctx), "2.5");
  EXPECT_EQ(Expand("{{ range query \"none\" }}x{{ else }}empty{{ end }}", 0, ctx), "empty");
  EXPECT_EQ(Expand("{{ query \"none\" | first | value }}", 0, ctx),
            "ERR: error executing template __alert_A: template: __alert_A:1:130: executing "
            "\"__alert_A\" at <first>: error calling first: first() called on vector with no "
            "elements");
  EXPECT_EQ(Expand("{{ query \"bad\" }}", 0, ctx),
            "ERR: error executing template __alert_A: template: __alert_A:1:115: executing "
            "\"__alert_A\" at <query \"bad\">: error calling query: 1:5: parse error: unclosed "
            "left parenthesis");
}

TEST(Template, ErrorsWordedAsGo) {
  EXPECT_EQ(Expand("{{ gt $value 80 }}"),
            "ERR: error executing template __alert_A: template: __alert_A:1:115: executing "
            "\"__alert_A\" at <gt $value 80>: error calling gt: incompatible types for comparison");
  EXPECT_EQ(Expand("{{ .Foo }}"),
            "ERR: error executing template __alert_A: template: __alert_A:1:115: executing "
            "\"__alert_A\" at <.Foo>: can't evaluate field Foo in type struct { Labels "
            "map[string]string; ExternalLabels map[string]string; ExternalURL string; Value "
            "float64 }");
  EXPECT_EQ(Expand("{{ humanize \"abc\" }}"),
            "ERR: error executing template __alert_A: template: __alert_A:1:115: executing "
            "\"__alert_A\" at <humanize \"abc\">: error calling humanize: strconv.ParseFloat: "
            "parsing \"abc\": invalid syntax");
  EXPECT_EQ(CheckTemplate("__alert_C", "{{ .Foo").message(),
            "template: __alert_C:1: unclosed action");
  EXPECT_EQ(CheckTemplate("__alert_C", "{{ if true }}x").message(),
            "template: __alert_C:1: unexpected EOF");
  EXPECT_EQ(CheckTemplate("__alert_C", "{{ nofunc 1 }}").message(),
            "template: __alert_C:1: function \"nofunc\" not defined");
  EXPECT_EQ(CheckTemplate("__alert_C", "{{ $nope }}").message(),
            "template: __alert_C:1: undefined variable \"$nope\"");
  EXPECT_TRUE(CheckTemplate("__alert_C",
                            "{{ $labels.x }} {{ range $i, $s := query \"up\" }}{{ $i }}{{ end }}")
                  .ok());
}

// Nested actions and parentheses up to the limit expand; deeper ones are Go's "max expression
// depth exceeded", never a stack overflow (a rule file's annotation is untrusted text).
TEST(Template, NestingUpToTheLimitWorksAndPastItIsAnError) {
  auto repeat = [](const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
  };
  const int n = kMaxTemplateDepth;
  EXPECT_EQ(Expand("{{ " + repeat("(", n) + "1" + repeat(")", n) + " }}"), "1");
  EXPECT_EQ(Expand(repeat("{{ if true }}", n) + "deep" + repeat("{{ end }}", n)), "deep");
  EXPECT_EQ(
      Expand("{{ if false }}{{ " + repeat("else if false }}{{ ", n - 1) + "else }}last{{ end }}"),
      "last");
  for (const std::string& t :
       {"{{ " + repeat("(", n + 1) + "1" + repeat(")", n + 1) + " }}",
        "{{ " + repeat("(", 100000) + " }}",
        repeat("{{ if true }}", 30000) + repeat("{{ end }}", 30000),
        repeat("{{ with $value }}", n + 1) + repeat("{{ end }}", n + 1),
        "{{ if false }}" + repeat("{{ else if false }}", 30000) + "{{ end }}",
        repeat("{{ range $labels }}", 30000)}) {
    std::string out = Expand(t);
    EXPECT_NE(out.find("template: __alert_A:1: max expression depth exceeded"), std::string::npos)
        << out.substr(0, 200);
  }
}

}  // namespace
}  // namespace gw::rules
