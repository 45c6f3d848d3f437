// Hub page latency (docs/hub.md, docs/benchmarks.md "Fleet console"): the requests the fleet
// page, a node's page and a GPU page make, sent at once as the browser sends them, timed until the
// last answer — cold (the hub's store cache expired) and warm (within its TTL).
//
//   node bench/hub_latency.mjs BUILD/bin/gpuwarden agents [16]     # 16 real agents × 8 GPUs,
//                                                                  # scraped by VictoriaMetrics
//   node bench/hub_latency.mjs BUILD/bin/gpuwarden synthetic [128] # 128 nodes × 8 GPUs imported
//                                                                  # into VictoriaMetrics
//   GW_HUB_PAGES=fleet node bench/hub_latency.mjs …                 # only those pages (comma list)
// The synthetic store: one simulated 8-GPU agent's /metrics (every series), written for N nodes
// at 61 times 10 s apart over the last 10 minutes through /api/v1/import/prometheus.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Fleet } from '../tests/web/hub_fleet.mjs';
import { Agent, sleep } from '../tests/web/support.mjs';

const [binary, mode = 'agents', count] = process.argv.slice(2);
if (!binary || !['agents', 'synthetic'].includes(mode)) {
  console.error('usage: node bench/hub_latency.mjs GPUWARDEN agents|synthetic [N]');
  process.exit(2);
}
const ROUNDS = 15;
const TTL_MS = 1500;

function pages(node, now) {
  const n = `node=${encodeURIComponent(node)}`;
  const chart = (metric, gpu) => `/api/gw/v1/chart?metric=${metric}${gpu === undefined ? '' : `&gpu=${gpu}`}&start=${now - 900}&end=${now}&points=600&${n}`;
  const shared = (scope) => ['/api/snapshot', '/api/v1/alerts', '/api/gw/v1/jobs?running=1'].map((p) => (scope ? `${p}${p.includes('?') ? '&' : '?'}${n}` : p));
  const gpuMetrics = ['gpu_utilization_ratio', 'gpu_sm_active_ratio', 'gpu_memory_utilization_ratio', 'gpu_sm_occupancy_ratio',
    'gpu_tensor_active_ratio', 'gpu_dram_active_ratio', 'gpu_pipe_active_ratio', 'gpu_mig_sm_active_ratio', 'gpu_mig_memory_used_bytes',
    'gpu_nvlink_transmit_bytes_per_second', 'gpu_nvlink_receive_bytes_per_second', 'gpu_temperature_celsius', 'gpu_power_watts',
    'gpu_memory_used_bytes', 'gpu_sm_clock_hertz', 'gpu_clock_event_active'];
  return {
    fleet: [...shared(false), '/api/gw/v1/reclaim?limit=1'],
    node: [...shared(true), chart('gpu_utilization_ratio').replace('points=600', 'points=90'), `/api/gw/v1/reclaim?limit=1&${n}`],
    gpu: [...shared(true), ...gpuMetrics.map((m) => chart(m, 0)), chart('ALERTS')],
  };
}

async function timeSet(base, paths) {
  const t0 = performance.now();
  const statuses = await Promise.all(paths.map(async (p) => {
    const r = await fetch(base + p);
    await r.arrayBuffer();
    return r.status;
  }));
  const ms = performance.now() - t0;
  const bad = statuses.filter((s) => s !== 200).length;
  return { ms, bad };
}

function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { median: q(0.5), p95: q(0.95), max: s[s.length - 1] };
}

async function measure(base, node, label) {
  const snap = await (await fetch(`${base}/api/snapshot`)).json();
  const now = Math.floor(snap.taken_at);
  const only = (process.env.GW_HUB_PAGES || '').split(',').filter(Boolean);
  const sets = Object.fromEntries(Object.entries(pages(node, now)).filter(([name]) => !only.length || only.includes(name)));
  const rows = [];
  for (const [name, paths] of Object.entries(sets)) {
    const cold = [];
    const warm = [];
    let bad = 0;
    for (let i = 0; i < ROUNDS; i++) {
      await sleep(TTL_MS + 100);
      const c = await timeSet(base, paths);
      const w = await timeSet(base, paths);
      cold.push(c.ms);
      warm.push(w.ms);
      bad += c.bad + w.bad;
    }
    const c = stats(cold);
    const w = stats(warm);
    rows.push(`| ${label} | ${name} (${paths.length} requests) | ${c.median.toFixed(0)} ms | ${c.p95.toFixed(0)} ms | ${w.median.toFixed(0)} ms | ${bad} |`);
  }
  return rows;
}

async function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

function start(argv) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  child.log = '';
  child.stdout.on('data', (c) => { child.log += c; });
  child.stderr.on('data', (c) => { child.log += c; });
  return child;
}

async function stopChild(c) {
  if (c.exitCode !== null) return;
  const done = new Promise((r) => c.once('exit', r));
  c.kill('SIGTERM');
  await done;
}

async function synthetic(nodes) {
  const work = mkdtempSync(join(tmpdir(), 'gw-hub-bench-'));
  const agent = await Agent.start(binary, ['--simulate', 'demo']);
  await sleep(4000);
  const text = await (await fetch(`${agent.url}/metrics`)).text();
  await agent.stop();
  const lines = text.split('\n').filter((l) => l && l[0] !== '#' && l.startsWith('gpu'));
  const port = await freePort();
  const vm = start(['victoria-metrics', `-storageDataPath=${join(work, 'vm')}`, `-httpListenAddr=127.0.0.1:${port}`, '-search.latencyOffset=1s', '-loggerLevel=ERROR']);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) { try { if ((await fetch(`${url}/health`)).ok) break; } catch (e) { /* not yet */ } await sleep(200); }
  const end = Date.now();
  let samples = 0;
  for (let k = 1; k <= nodes; k++) {
    const node = `node-${String(k).padStart(3, '0')}`;
    const out = [];
    for (let t = end - 600000; t <= end; t += 10000) {
      for (const l of lines) {
        const brace = l.indexOf('{');
        const sp = brace >= 0 ? l.lastIndexOf('} ') + 1 : l.indexOf(' ');
        const key = l.slice(0, sp);
        const value = Number(l.slice(sp + 1).split(' ')[0]) * (0.9 + 0.2 * Math.random());
        const labelled = brace >= 0 ? `${key.slice(0, -1)},instance="${node}"}` : `${key}{instance="${node}"}`;
        out.push(`${labelled} ${value} ${t}`);
      }
    }
    samples += out.length;
    const r = await fetch(`${url}/api/v1/import/prometheus`, { method: 'POST', body: out.join('\n') + '\n' });
    if (!r.ok) throw new Error(`import: HTTP ${r.status} ${await r.text()}`);
  }
  await fetch(`${url}/internal/force_flush`).catch(() => {});
  await sleep(3000);
  const hubPort = await freePort();
  const hub = start([binary, 'hub', '--store', url, '--listen', `127.0.0.1:${hubPort}`, '--findings-interval', '10m']);
  await sleep(1500);
  const base = `http://127.0.0.1:${hubPort}`;
  console.log(`# synthetic: ${nodes} nodes × 8 GPUs, ${lines.length} series per node, ${samples} samples imported`);
  const rows = await measure(base, 'node-007', `${nodes * 8} GPUs (${nodes} nodes, imported)`);
  const status = await (await fetch(`${base}/api/gw/v1/hub`)).json();
  console.log(`# store requests sent by the hub: ${status.data.store_requests}`);
  await stopChild(hub);
  await stopChild(vm);
  rmSync(work, { recursive: true, force: true });
  return rows;
}

async function agents(nodes) {
  const fleet = await Fleet.start(binary, { nodes, kind: 'victoriametrics', findingsInterval: '30s' });
  try {
    await fleet.waitForData(180000);
    await sleep(20000);  // some history for the charts
    const rows = await measure(fleet.hubUrl, 'node-07', `${nodes * 8} GPUs (${nodes} agents)`);
    const status = (await fleet.hubJson('/api/gw/v1/hub')).body;
    console.log(`# store requests sent by the hub: ${status.data.store_requests}`);
    return rows;
  } finally {
    await fleet.stop();
  }
}

const rows = mode === 'agents' ? await agents(Number(count || 16)) : await synthetic(Number(count || 128));
console.log('| fleet | page | cold median | cold p95 | warm median | non-200 |');
console.log('|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
writeFileSync(join(tmpdir(), `gw-hub-latency-${mode}.txt`), rows.join('\n') + '\n');
