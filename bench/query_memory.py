#!/usr/bin/env python3
"""Resident memory of `gpuwarden serve` after repeating a wide PromQL query, and when idle.

  python3 bench/query_memory.py BUILD/bin/gpuwarden [--repeats 300] [--clients 4] [--port 19900]
                                [--kind or|matchers|regex] [--smaps] [ENV=VALUE ...]

Starts the agent on the simulated demo fleet, measures VmRSS idle, sends the query REPEATS times
from CLIENTS threads (POST /api/v1/query), then reads VmRSS after 0, 5, 15 and 30 s of idle and
the heap figures from /metrics. ENV=VALUE pairs go to the agent's environment (e.g.
LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 or MALLOC_ARENA_MAX=8).
Numbers: docs/benchmarks.md ("Memory after large queries").
"""
import argparse
import os
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request


def wide_query(kind):
    if kind == 'or':  # 5,000 selectors, nested at most 150 deep (100 groups of 50)
        groups = ['(' + ' or '.join(f'gpu_up{{gpu="{i % 8}"}}' for i in range(50)) + ')'
                  for _ in range(100)]
        return ' or '.join(groups)
    if kind == 'matchers':
        return 'gpu_up{' + ','.join(f'gpu!="x{i}"' for i in range(2500)) + '}'
    return 'gpu_up{gpu=~"' + '|'.join(f'v{i}' for i in range(5000)) + '"}'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('binary')
    ap.add_argument('--repeats', type=int, default=300)
    ap.add_argument('--clients', type=int, default=4)
    ap.add_argument('--port', type=int, default=19900)
    ap.add_argument('--kind', default='or')
    ap.add_argument('--smaps', action='store_true')
    ap.add_argument('env', nargs='*')
    a = ap.parse_args()
    env = dict(os.environ)
    for kv in a.env:
        k, v = kv.split('=', 1)
        env[k] = v
    d = tempfile.mkdtemp()
    agent = subprocess.Popen([a.binary, 'serve', '--simulate', 'demo', '--listen',
                              f'127.0.0.1:{a.port}', '--data-dir', d + '/data'],
                             stdout=open(d + '/log', 'w'), stderr=subprocess.STDOUT, env=env)

    def rss_mb():
        with open(f'/proc/{agent.pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024
        return -1

    def call(path, data=None, timeout=120):
        try:
            r = urllib.request.urlopen(f'http://127.0.0.1:{a.port}{path}', data=data,
                                       timeout=timeout)
            return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    try:
        for _ in range(100):
            try:
                if call('/readyz', timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.3)
        time.sleep(3)
        q = wide_query(a.kind)
        call('/api/v1/query?query=sum(gpu_up)')
        print(f'query {a.kind}: {len(q)} bytes; RSS idle before: {rss_mb():.1f} MB', flush=True)
        body = urllib.parse.urlencode({'query': q}).encode()
        errors = []

        def client(n):
            for _ in range(n):
                status, reply = call('/api/v1/query', data=body)
                if status != 200:
                    errors.append((status, reply[:200]))

        t0 = time.time()
        threads = [threading.Thread(target=client, args=(a.repeats // a.clients,))
                   for _ in range(a.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f'{a.repeats} queries by {a.clients} clients in {time.time() - t0:.1f} s, '
              f'{len(errors)} errors; RSS right after: {rss_mb():.1f} MB', flush=True)
        waited = 0
        for w in (5, 15, 30):
            time.sleep(w - waited)
            waited = w
            print(f'  idle {w:2d} s: RSS {rss_mb():.1f} MB', flush=True)
        _, page = call('/metrics')
        for line in page.decode().splitlines():
            if line.startswith(('gpuwarden_process_heap', 'process_resident')):
                print('  ' + line)
        if a.smaps:
            maps, cur = [], None
            with open(f'/proc/{agent.pid}/smaps') as f:
                for line in f:
                    parts = line.split()
                    if '-' in parts[0] and not parts[0].endswith(':'):
                        cur = [line.strip()[:90], 0]
                        maps.append(cur)
                    elif parts[0] == 'Rss:':
                        cur[1] = int(parts[1])
            for rss_kb, name in sorted(((m[1], m[0]) for m in maps), reverse=True)[:10]:
                print(f'  {rss_kb / 1024:6.1f} MB  {name}')
    finally:
        agent.terminate()
        agent.wait()


if __name__ == '__main__':
    main()
