#!/usr/bin/env python3
"""Regenerates testdata/compat.txt: PromQL expectations computed by the real Prometheus 2.42.

Runs `promtool test rules` (Prometheus' own engine) over the data set below with every
expression at every evaluation time, and writes the results it reports as literal test data for
engine_compat_test.cpp. The unit tests never run Prometheus; run this by hand when cases change:
    python3 tests/promql/gen_compat.py   (needs promtool 2.42 on PATH)
"""
import json
import os
import random
import re
import subprocess
import sys
import tempfile

INTERVAL_S = 30
N = 41  # samples per series: 0s .. 20m

def counter(rng, start, resets=(), step=(1, 20)):
    v, out = start, []
    for i in range(N):
        if i in resets:
            v = rng.randint(0, 3)
        out.append(str(v))
        v += rng.randint(*step)
    return out

def gauge(rng, lo, hi, decimals=0):
    return [str(round(rng.uniform(lo, hi), decimals)) if decimals else str(rng.randint(lo, hi))
            for _ in range(N)]

def series():
    rng = random.Random(42)
    s = {}
    s['http_requests_total{job="api",instance="a"}'] = counter(rng, 100, resets={15})
    b = counter(rng, 5)
    b = ['_'] * 10 + b[10:30] + ['stale'] + ['_'] * (N - 31)
    s['http_requests_total{job="api",instance="b"}'] = b
    c = counter(rng, 0, resets={25, 26})
    for i in (5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 20):
        c[i] = '_'
    s['http_requests_total{job="db",instance="a"}'] = c
    t0 = gauge(rng, 30, 90)
    s['gpu_temp{gpu="0",host="h1"}'] = t0
    t1 = gauge(rng, 30, 90)
    t1[12] = 'NaN'
    t1[13] = 'NaN'
    s['gpu_temp{gpu="1",host="h1"}'] = t1
    t2 = gauge(rng, 20.5, 95.5, 2)
    t2 = t2[:25] + ['stale'] + t2[26:]
    s['gpu_temp{gpu="0",host="h2"}'] = t2
    s['gpu_power{gpu="0",host="h1"}'] = gauge(rng, 100, 700)
    s['gpu_power{gpu="1",host="h1"}'] = gauge(rng, 100, 700)
    p2 = gauge(rng, 100, 700)
    p2 = ['_'] * 20 + p2[20:]
    s['gpu_power{gpu="0",host="h2"}'] = p2
    s['gpu_info{gpu="0",host="h1",model="H100"}'] = ['1'] * N
    s['gpu_info{gpu="1",host="h1",model="A100"}'] = ['1'] * N
    s['gpu_info{gpu="0",host="h2",model="H100"}'] = ['1'] * N
    up = ['1'] * N
    for i in range(16, 22):
        up[i] = '0'
    s['up{job="api",instance="a"}'] = up
    s['up{job="db",instance="a"}'] = ['1'] * 30 + ['stale'] + ['_'] * (N - 31)
    cum = [0, 0, 0, 0]
    buckets = {'0.1': [], '0.5': [], '1': [], '+Inf': []}
    for _ in range(N):
        obs = [rng.random() * 1.5 for _ in range(rng.randint(0, 6))]
        for j, le in enumerate([0.1, 0.5, 1.0, float('inf')]):
            cum[j] += sum(1 for o in obs if o <= le)
        for j, k in enumerate(buckets):
            buckets[k].append(str(cum[j]))
    for k, v in buckets.items():
        s['req_duration_seconds_bucket{job="api",le="%s"}' % k] = v
    s['flappy{kind="x"}'] = ['1', '2', '1', '2', '_', '_', '3', 'NaN', 'NaN', '4'] * 4 + ['5']
    s['neg{kind="y"}'] = [str(-i * 1.5) for i in range(N)]
    s['late{kind="z"}'] = ['_'] * 35 + [str(i) for i in range(N - 35)]
    # Irregular spacing (gaps of 1..4 intervals) so extrapolation meets boundaries at odd
    # distances.
    j, v, val = [], 0, 0
    while len(j) < N:
        gap = rng.randint(0, 3)
        j.extend(['_'] * min(gap, N - len(j)))
        if len(j) < N:
            val = val + rng.randint(0, 40) if rng.random() > 0.1 else rng.randint(0, 5)
            j.append(str(val))
    s['jitter_total{kind="j"}'] = j
    return s

TIMES = ['0s', '1m', '2m30s', '5m', '7m', '7m7s', '10m', '12m15s', '13m33s', '15m', '17m51s',
         '20m', '24m', '26m']

EXPRS = r'''
http_requests_total
http_requests_total{job="api"}
http_requests_total{job!="api"}
http_requests_total{instance=~"a|b",job=~"a.*"}
http_requests_total{instance!~"a"}
{__name__="gpu_temp",host="h1"}
{__name__=~"gpu_(temp|power)",gpu="1"}
gpu_temp offset 2m
gpu_temp offset -3m
gpu_temp @ 300
gpu_temp @ 300 offset 1m
up
rate(http_requests_total[5m])
rate(http_requests_total[1m])
rate(http_requests_total[2m] offset 1m)
rate(http_requests_total[10m] @ 600)
increase(http_requests_total[5m])
increase(http_requests_total[3m])
delta(gpu_temp[5m])
delta(neg[4m])
irate(http_requests_total[5m])
idelta(gpu_temp[3m])
deriv(gpu_temp[5m])
deriv(neg[3m])
predict_linear(gpu_temp[5m], 600)
predict_linear(http_requests_total[4m], 3600)
changes(gpu_temp[5m])
changes(flappy[5m])
resets(http_requests_total[10m])
resets(flappy[6m])
avg_over_time(gpu_temp[5m])
min_over_time(gpu_temp[5m])
max_over_time(gpu_temp[5m])
sum_over_time(gpu_power[3m])
count_over_time(http_requests_total[5m])
last_over_time(gpu_temp[2m])
quantile_over_time(0.9, gpu_temp[5m])
quantile_over_time(0.5, flappy[5m])
quantile_over_time(-1, gpu_temp[5m])
stddev_over_time(gpu_temp[5m])
stdvar_over_time(gpu_power[4m])
present_over_time(late[5m])
absent_over_time(late[2m])
absent_over_time(nonexistent{job="x",a=~"b"}[5m])
absent(nonexistent{job="x",instance="y"})
absent(up)
absent(late)
max_over_time(flappy[3m])
min_over_time(flappy[3m])
avg_over_time(flappy[3m])
sum(gpu_temp)
sum by (host) (gpu_temp)
sum(gpu_temp) by (host)
sum without (gpu) (gpu_power)
avg by (host) (gpu_temp)
min by (gpu) (gpu_power)
max(gpu_power)
group by (host) (gpu_info)
count(http_requests_total)
count by (job) (http_requests_total)
count_values("value", up)
count_values by (job) ("v", up)
stddev(gpu_power)
stdvar by (host) (gpu_power)
topk(2, gpu_power)
bottomk(1, gpu_power)
topk by (host) (1, gpu_temp)
topk(2, flappy or gpu_temp)
quantile(0.5, gpu_power)
quantile by (host) (0.75, gpu_temp)
sum(rate(http_requests_total[5m])) by (job)
gpu_power / gpu_temp
gpu_power * on(gpu, host) group_left(model) gpu_info
gpu_info * on(gpu, host) group_right(model) gpu_power
gpu_power / ignoring(model) gpu_info
gpu_temp > 60
gpu_temp > bool 60
60 < gpu_temp
60 < bool gpu_temp
gpu_temp == gpu_temp
gpu_temp != bool gpu_power
gpu_power >= on(host, gpu) gpu_temp * 5
gpu_temp + 1
2 * gpu_temp - 1
gpu_temp % 7
gpu_temp ^ 2
2 ^ 3 ^ 2
-gpu_temp
-2 ^ 2
gpu_temp atan2 gpu_power
gpu_temp and gpu_power
gpu_temp or up
gpu_temp unless on(host) up
up or on(job) http_requests_total
http_requests_total and on(job) up == 0
gpu_temp unless gpu_power
1 + 2 * 3
10 % 3
1 == bool 1
(1 + 2) / 4
time()
vector(time())
scalar(up{job="api"})
scalar(gpu_temp)
abs(neg)
ceil(gpu_temp / 7)
floor(gpu_temp / 7)
round(gpu_temp / 7)
round(gpu_temp, 5)
exp(gpu_temp / 100)
ln(gpu_power)
log2(gpu_power)
log10(gpu_power)
sqrt(gpu_power)
sgn(neg)
clamp(gpu_temp, 40, 60)
clamp(gpu_temp, 60, 40)
clamp_min(gpu_temp, 50)
clamp_max(gpu_temp, 50)
timestamp(gpu_temp)
timestamp(gpu_temp offset 1m)
timestamp(abs(gpu_temp))
sort(gpu_power)
sort_desc(gpu_power)
label_replace(gpu_temp, "host_id", "$1", "host", "h(.*)")
label_replace(gpu_temp, "host", "", "host", "h2")
label_replace(gpu_temp, "x", "${1}-$2", "host", "(h)(.*)")
label_join(gpu_temp, "id", "/", "host", "gpu")
histogram_quantile(0.9, req_duration_seconds_bucket)
histogram_quantile(0.5, rate(req_duration_seconds_bucket[5m]))
histogram_quantile(0.99, sum by (le) (rate(req_duration_seconds_bucket[5m])))
minute()
hour(vector(7200))
day_of_week(vector(86400 * 3))
day_of_month(vector(86400 * 40))
days_in_month(vector(86400 * 40))
month(vector(86400 * 40))
year(vector(86400 * 400))
max_over_time(gpu_temp[5m:1m])
rate(http_requests_total[5m:30s])
avg_over_time(rate(http_requests_total[2m])[6m:1m])
max_over_time(sum(gpu_power)[10m:2m] offset 1m)
sum_over_time(up[3m:])
min_over_time(gpu_temp[4m:45s] @ 600)
gpu_temp * on(host) gpu_power
gpu_temp * on(host) group_left gpu_info
sum(gpu_power) by (gpu) / on() group_left sum(gpu_power)
abs({__name__=~"gpu_.*"})
count(up == 1) by (job)
sum by (job) (increase(http_requests_total[10m])) / on(job) group_left count by (job) (up)
rate(http_requests_total[5m]) > 0.5
http_requests_total{job="api"} - http_requests_total{job="api"} offset 1m
max by (host) (gpu_temp) - min by (host) (gpu_temp)
avg(gpu_temp) without (gpu)
sum(up{job="none"})
count_values("t", gpu_temp > 80)
deriv(http_requests_total[1m])
predict_linear(up[5m], 60)
changes(up[10m])
last_over_time(up[10m])
increase(late[5m])
rate(jitter_total[47s])
rate(jitter_total[2m13s])
rate(jitter_total[5m])
increase(jitter_total[3m])
delta(jitter_total[4m])
irate(jitter_total[5m])
resets(jitter_total[10m])
deriv(jitter_total[3m])
rate(gpu_temp[1m47s])
increase(http_requests_total[1m1s])
delta(gpu_power[2m59s])
'''.strip().splitlines()

EXTRA = r'''
1 > 2
1 > bool 2
gpu_temp{
gpu_temp{host=}
gpu_temp{host="h1"
gpu_temp{host="h1",}
{}
{host=~".*"}
{host=""}
foo{__name__="bar"}
sum(gpu_temp
sum by (host) gpu_temp
rate(gpu_temp)
rate(gpu_temp[5m], 1)
abs(gpu_temp[5m])
unknown_fn(gpu_temp)
round()
label_join(gpu_temp)
gpu_temp + "str"
gpu_temp and 1
1 and gpu_temp
gpu_temp + bool gpu_power
gpu_temp + on(host) group_left(host) gpu_power
gpu_temp and on(host) group_left gpu_power
sum(gpu_temp)[5m]
(gpu_temp)[5m]
gpu_temp[5m] offset 1m
gpu_temp offset 1m offset 2m
gpu_temp @ 100 @ 200
rate(gpu_temp[5m:1m:1m])
gpu_temp[5m
1 +
+
)
gpu_temp}
gpu_temp $
"unterminated
topk(gpu_temp)
topk("a", gpu_temp)
count_values(1, gpu_temp)
quantile(gpu_temp, 0.5)
-gpu_temp[5m]
time(1)
histogram_quantile(0.5)
0x1F + 1
1e3 / 010
Inf - inf
-Inf
NaN
+5
- -3
1 - - 2
2 ^ -1
-(2 ^ 2)
.5 * 2
gpu_temp @ start()
gpu_temp @ end() offset 5m
rate(http_requests_total[5m] @ end())
max_over_time(gpu_temp[10m:1m] @ 600 offset 1m)
max_over_time(gpu_temp[3m:1m] offset -2m)
sum_over_time(gpu_temp[7m:90s])
count_over_time(gpu_temp[5m:7s])
rate(increase(http_requests_total[2m])[5m:20s])
sum(sum_over_time(up[5m:])) by (job)
quantile(1.5, gpu_temp)
quantile(-0.5, gpu_temp)
quantile(0, gpu_temp)
topk(0, gpu_temp)
topk(1.9, gpu_temp)
bottomk(2, flappy or gpu_temp or neg)
topk(3, vector(1) or vector(2))
topk by (host) (5, gpu_temp)
count_values("le", req_duration_seconds_bucket)
count_values("x", neg / 7)
count_values without (job) ("z", http_requests_total)
count_values("0bad", up)
label_replace(gpu_temp, "x", "$1", "host", "(")
label_replace(gpu_temp, "0x", "$1", "host", "(.*)")
label_replace(gpu_temp, "x", "$1x$2", "host", "(h)(.*)")
label_replace(gpu_temp, "x", "$$1", "host", "(h)(.*)")
label_replace(gpu_temp, "__name__", "renamed", "host", "h1")
label_join(gpu_temp, "host", "", "nonexistent")
label_join(up, "x", "-", "job", "instance", "job")
sin(gpu_temp)
cos(neg)
tan(flappy)
asin(gpu_temp / 100)
acos(neg / 60)
atan(neg)
asinh(neg)
acosh(gpu_temp)
acosh(flappy - 1)
atanh(flappy / 4)
atanh(neg / 60)
sinh(neg / 10)
cosh(gpu_temp / 10)
tanh(gpu_power / 100)
deg(neg)
rad(gpu_temp)
pi()
deg(vector(pi()))
day_of_year()
day_of_year(vector(86400 * 59))
day_of_year(vector(86400 * 365 - 1))
day_of_year(http_requests_total * 86400)
day_of_year(flappy * 1e20)
holt_winters(gpu_temp[5m], 0.5, 0.5)
holt_winters(http_requests_total[10m], 0.1, 0.9)
holt_winters(flappy[3m], 0.3, 0.7)
holt_winters(jitter_total[2m], 0.5, 0.5)
holt_winters(late[5m], 0.5, 0.5)
holt_winters(rate(http_requests_total[2m])[6m:1m], 0.4, 0.6)
holt_winters(gpu_temp[5m], 1, 0.5)
holt_winters(gpu_temp[5m], 0.5, 0)
holt_winters(late[5m], 2, 0.5)
holt_winters(gpu_temp[5m], scalar(up{job="db"}) - 0.5, 0.5)
histogram_count(req_duration_seconds_bucket)
histogram_sum(gpu_temp)
histogram_fraction(0, 0.5, req_duration_seconds_bucket)
year(vector(1e20))
month(vector(NaN))
day_of_month(vector(-Inf))
day_of_week(flappy * 1e20)
hour(vector(-1e20))
minute(vector(Inf))
days_in_month(vector(1e20))
year(vector(-62135596801))
month(vector(253402300800))
histogram_quantile(0.5, req_duration_seconds_bucket{le!="+Inf"})
histogram_quantile(1.5, req_duration_seconds_bucket)
histogram_quantile(-1, req_duration_seconds_bucket)
histogram_quantile(0, req_duration_seconds_bucket)
histogram_quantile(1, req_duration_seconds_bucket)
histogram_quantile(0.5, label_replace(req_duration_seconds_bucket, "le", "0.3", "le", "0.5"))
histogram_quantile(0.9, label_replace(req_duration_seconds_bucket, "le", "0.05", "le", "1"))
sum by (le) (req_duration_seconds_bucket)
gpu_temp > on(host, gpu) group_left gpu_info
gpu_info < bool on(gpu, host) group_right gpu_temp
gpu_power - ignoring(model) group_left gpu_info
gpu_temp * on() group_left(model) topk(1, gpu_info)
gpu_info * on(gpu, host) group_right gpu_power
up == bool on(job) group_left sum by (job) (up)
up == on(job) group_left sum by (job) (up)
gpu_temp > 1000 or vector(0)
gpu_temp unless gpu_temp
gpu_temp / 0
-gpu_temp / 0
0 / 0
gpu_temp % 0
neg % 4
neg ^ 0.5
gpu_temp atan2 -1
2 atan2 1
scalar(sum(up)) * gpu_temp
vector(scalar(up))
sum(up) by (instance, job) == on (instance, job) up
sort(flappy or gpu_temp)
sort_desc(flappy or gpu_temp)
timestamp(up)
timestamp(vector(1))
timestamp(gpu_temp @ 300)
hour(timestamp(gpu_temp))
minute(gpu_temp * 60)
day_of_week()
days_in_month(vector(86400 * 59))
days_in_month(vector(-86400))
year(vector(-1))
month(vector(951782400))
days_in_month(vector(951782400))
sgn(vector(0) - 1)
abs(-gpu_temp)
ln(vector(0))
sqrt(neg)
exp(vector(1000))
round(neg, 2)
round(neg / 3, 0.1)
clamp_max(gpu_temp, NaN)
clamp(neg, -5, -2)
predict_linear(neg[10m], -60)
deriv(up[10m])
delta(up[3m])
irate(flappy[2m])
idelta(flappy[2m])
increase(flappy[10m])
rate(neg[5m])
changes(neg[1m])
resets(neg[20m])
avg_over_time(up[25m])
count_over_time(up[30s])
count_over_time(up[1ms])
last_over_time(late[30s])
max_over_time(late[1m] offset 1m)
absent_over_time(up{job="db"}[1m])
absent(up{job="db"})
absent(nonexistent{job="a",job="b",x="y"})
absent(sum(nonexistent))
absent_over_time(sum(up)[5m:])
present_over_time(up{job="db"}[1m])
stddev_over_time(flappy[5m])
stdvar_over_time(neg[5m])
avg by (job) (rate(http_requests_total[5m]))
group(gpu_temp) by (host)
stddev by (host) (gpu_temp)
count(gpu_temp > 50) without (gpu)
max without () (gpu_temp)
sum by (__name__) ({__name__=~"gpu_.*"})
sum by (nope) (gpu_temp)
avg(gpu_temp / 0)
min(flappy)
max(flappy or neg)
sum(gpu_temp) + sum(gpu_power)
sum(gpu_temp) > bool 100
vector(1) + on() group_left sum(up)
'''.strip().splitlines()

def promql_labels(s):
    name, _, rest = s.partition('{')
    return name, '{' + rest if rest else ''

def main():
    data = series()
    out_lines = ['# Generated by gen_compat.py from promtool 2.42 (test rules); do not edit by hand.',
                 '# interval %ds' % INTERVAL_S]
    for k, v in data.items():
        out_lines.append('series %s %s' % (k, ' '.join(v)))
    here = os.path.dirname(os.path.abspath(__file__))
    syntax = [l for l in open(os.path.join(here, 'testdata', 'syntax_cases.txt')).read().split('\n') if l]
    cases = [(e, t) for e in EXPRS + EXTRA for t in TIMES] + [(e, '5m') for e in syntax]
    tests = []
    for i, (e, t) in enumerate(cases):
        tests.append('      - expr: %s\n        eval_time: %s\n        exp_samples: []' %
                     (quote(e), t))
    yml = ('evaluation_interval: 1m\ntests:\n  - interval: %ds\n    input_series:\n' % INTERVAL_S +
           ''.join("      - series: %s\n        values: '%s'\n" % (quote(k), ' '.join(v))
                   for k, v in data.items()) +
           '    promql_expr_test:\n' + '\n'.join(tests) + '\n')
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 't.yml')
        open(path, 'w').write(yml)
        res = subprocess.run(['promtool', 'test', 'rules', path], capture_output=True, text=True)
    text = res.stdout + res.stderr
    results = parse(text)
    for e, t in cases:
        r = results.get((e, t))
        out_lines.append('eval %s %s' % (t, e))
        if r is None:
            continue  # passed with no samples expected: empty result
        if r == ['error rule result is not a vector or scalar']:
            r = ['matrix']  # promtool evaluates only instant vectors and scalars
        for line in r:
            out_lines.append('  ' + line)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'testdata', 'compat.txt')
    open(path, 'w').write('\n'.join(out_lines) + '\n')
    print('wrote %d cases to %s' % (len(cases), path))

def quote(s):
    return "'" + s.replace("'", "''") + "'"

HEADER = re.compile(r'^    expr: (".*"), time: (\S+?),(?: err: (.*))?$')
SAMPLE = re.compile(r'\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\} \S+?(?=, \{|$)')

def parse(text):
    results = {}
    key = None
    for line in text.splitlines():
        m = HEADER.match(line)
        if m:
            key = (json.loads(m.group(1)), m.group(2))
            results[key] = ['error ' + m.group(3)] if m.group(3) is not None else []
            continue
        stripped = line.strip()
        if key and stripped.startswith('got:'):
            body = stripped[4:].strip()
            if body != 'nil':
                results[key] = SAMPLE.findall(body)
    return results

if __name__ == '__main__':
    sys.exit(main())
