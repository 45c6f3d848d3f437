// A simulated fleet in a real central store, for the hub's browser test and its benchmark
// (docs/hub.md): N `gpuwarden serve` agents (8 simulated GPUs each, jobs from a stand-in
// squeue), scraped every 2 s by a real VictoriaMetrics 1.79 (-promscrape.config) or Prometheus
// 2.42 (with the rule pack) through one Prometheus file_sd file, which `gpuwarden hub --agents`
// reads too. Every process on 127.0.0.1, stopped by its own PID.
//
// Node k (1..N): GPUs 0-3 training at 60 + 5·(k mod 8) % (job 10000+k, team by k), GPUs 4-5
// held idle (job 20000+k), GPU 6 memory-bound, GPU 7 idle. On the fault node (7 by default)
// GPU 2 takes an uncorrectable ECC error 5 s after its agent starts. On node 3 a short job
// (FINISHED_JOB, GPU 7) completes 30 s after the plan starts (its agent sees it running first),
// so that agent has a finished record by the time the test asks for one.
// Every agent prices its GPUs (PRICES, in EUR), so the teams have a cost.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simMachineEnv, sleep } from './support.mjs';

const SOURCE = new URL('../..', import.meta.url).pathname;
const MODELS = ['H100', 'A100-80GB', 'H200', 'L40S'];
const ACCOUNTS_A = ['ml-research', 'vision-lab', 'speech-lab', 'analytics'];
const ACCOUNTS_B = ['vision-lab', 'vision-lab', 'analytics'];
const TEAM_OF = { 'ml-research': 'research', 'vision-lab': 'vision', 'speech-lab': 'speech', analytics: 'data' };
export const FAULT_GPU = 2;
export const FINISHED_JOB = { job_id: 30003, name: 'short-3', user: 'w3', account: 'speech-lab', partition: 'gpu', node: 'node-03', gpus: [7], end_after: 30 };
export const PRICES = { gpu_hour: { H100: 4.0, default: 2.5 }, energy_kwh: 0.3, currency: 'EUR' };

export const nodeName = (k) => `node-${String(k).padStart(2, '0')}`;
export const teamOf = (account) => TEAM_OF[account];

// A port free a moment ago on 127.0.0.1, drawn from 20000-32767: below Linux's ephemeral range,
// so no outgoing connection or listen(0) beside this test takes it before its server binds it (a
// listen(0) port comes from that range; CI once lost a VictoriaMetrics start to that race).
async function freePort() {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 12768);
    const free = await new Promise((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port in 20000-32767');
}

// A child process with its output kept; stop() ends it by its PID.
class Child {
  constructor(name, argv, env = {}) {
    this.name = name;
    this.log = '';
    this.child = spawn(argv[0], argv.slice(1), { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout.on('data', (c) => { this.log = (this.log + c).slice(-20000); });
    this.child.stderr.on('data', (c) => { this.log = (this.log + c).slice(-20000); });
  }
  running() { return this.child.exitCode === null && this.child.signalCode === null; }
  async waitFor(re, ms) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const m = re.exec(this.log);
      if (m) return m;
      if (!this.running()) throw new Error(`${this.name} exited (${this.child.exitCode}):\n${this.log.slice(-3000)}`);
      await sleep(100);
    }
    throw new Error(`${this.name}: no ${re} within ${ms} ms:\n${this.log.slice(-3000)}`);
  }
  async stop() {
    if (!this.running()) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 20000);
    await exited;
    clearTimeout(timer);
  }
}

function scenario(k, fault) {
  const model = MODELS[(k - 1) % MODELS.length];
  const train = 60 + 5 * (k % 8);
  const faulty = fault ? `\n    faults:\n      - {type: ecc_uncorrectable, at: 5s}` : '';
  return `name: ${nodeName(k)}
description: hub test node ${k} (tests/web/hub_fleet.mjs)
seed: ${2000 + k}
clock: realtime
speed: 1
gpus:
  - model: ${model}
    count: 2
    workload: [{type: training, util: ${train}, mem_util: 40}]
  - model: ${model}${faulty}
    workload: [{type: training, util: ${train}, mem_util: 40}]
  - model: ${model}
    workload: [{type: training, util: ${train}, mem_util: 40}]
  - model: ${model}
    count: 2
    workload: [{type: idle_allocated}]
  - model: ${model}
    workload: [{type: memory_bound, util: 35, mem_util: 90}]
  - model: ${model}
    workload: [{type: idle}]
`;
}

export function jobsOf(k) {
  const a = ACCOUNTS_A[(k - 1) % ACCOUNTS_A.length];
  const b = ACCOUNTS_B[(k - 1) % ACCOUNTS_B.length];
  return [
    { job_id: 10000 + k, name: `train-${k}`, user: `u${k}`, account: a, partition: 'gpu', node: nodeName(k), gpus: [0, 1, 2, 3] },
    { job_id: 20000 + k, name: `notebook-${k}`, user: `v${k}`, account: b, partition: 'interactive', node: nodeName(k), gpus: [4, 5] },
    ...(FINISHED_JOB.node === nodeName(k) ? [FINISHED_JOB] : []),
  ];
}

export class Fleet {
  // kind: 'victoriametrics' or 'prometheus'.
  static async start(binary, { nodes = 16, faultNode = 7, kind = 'victoriametrics', findingsInterval = '5s' } = {}) {
    const f = new Fleet(binary, nodes, faultNode, kind);
    f.findingsInterval = findingsInterval;
    try {
      await f.startAll();
    } catch (e) {
      await f.stop();
      throw e;
    }
    return f;
  }

  constructor(binary, nodes, faultNode, kind) {
    Object.assign(this, { binary, nodes, faultNode, kind });
    this.work = mkdtempSync(join(tmpdir(), 'gw-hub-'));
    this.children = [];
    this.agents = [];
  }

  spawn(name, argv, env) {
    const c = new Child(name, argv, env);
    this.children.push(c);
    return c;
  }

  async startAll() {
    const w = this.work;
    const teams = {};
    for (const [account, team] of Object.entries(TEAM_OF)) teams[account] = team;
    const plan = { started: Math.floor(Date.now() / 1000), jobs: [] };
    for (let k = 1; k <= this.nodes; k++) plan.jobs.push(...jobsOf(k));
    writeFileSync(join(w, 'plan.json'), JSON.stringify(plan));
    const answer = join(w, 'squeue.json');
    this.squeue = this.spawn('standin squeue', ['python3', join(SOURCE, 'tests/deploy/standin_squeue.py'), '--plan', join(w, 'plan.json'), '--out', answer, '--every', '1']);
    const groups = [];
    for (let k = 1; k <= this.nodes; k++) {
      const name = nodeName(k);
      writeFileSync(join(w, `${name}.yaml`), scenario(k, k === this.faultNode));
      const config = `collect: {interval: 2s, slow_interval: 10s, memory_peak_interval: 0}
rules: {builtin: false}
jobs: {scheduler: slurm, squeue_command: [cat, ${answer}], poll_interval: 5s, node_name: ${name}}
teams: {accounts: ${JSON.stringify(teams)}}
storage: {flush_interval: 10m}
diagnose: {window: 1h, interval: 1h}
governance: {prices: ${JSON.stringify(PRICES)}}
`;
      writeFileSync(join(w, `${name}-gpuwarden.yaml`), config);
      const port = await freePort();
      const agent = this.spawn(name, [this.binary, 'serve', '--listen', `127.0.0.1:${port}`, '--data-dir', join(w, `${name}-data`),
        '--config', join(w, `${name}-gpuwarden.yaml`), '--simulate', join(w, `${name}.yaml`)], simMachineEnv());
      agent.port = port;
      this.agents.push(agent);
      groups.push(`- targets: ['127.0.0.1:${port}']\n  labels: {instance: ${name}, rack: r${Math.floor((k - 1) / 4) + 1}}\n`);
    }
    mkdirSync(join(w, 'targets'));
    this.agentsFile = join(w, 'targets', 'agents.yml');
    writeFileSync(this.agentsFile, groups.join(''));
    await this.startStore();
    const hubPort = await freePort();
    this.hub = this.spawn('hub', [this.binary, 'hub', '--store', this.storeUrl, '--agents', this.agentsFile,
      '--listen', `127.0.0.1:${hubPort}`, '--findings-interval', this.findingsInterval, '--findings-window', '15m',
      // VictoriaMetrics has no ALERTS (no vmalert): the hub evaluates the rule pack itself.
      ...(this.kind === 'victoriametrics' ? ['--rules', join(SOURCE, 'deploy/rules/*.yml'), '--rules-interval', '2s'] : [])]);
    await this.hub.waitFor(/\(port (\d+)\)/, 30000);
    this.hubUrl = `http://127.0.0.1:${hubPort}`;
  }

  async startStore() {
    const w = this.work;
    const port = await freePort();
    this.storePort = port;
    this.storeUrl = `http://127.0.0.1:${port}`;
    const scrape = `global: {scrape_interval: 2s, scrape_timeout: 2s}
scrape_configs:
  - job_name: gpuwarden
    file_sd_configs: [{files: ['${join(w, 'targets')}/*.yml']}]
`;
    if (this.kind === 'victoriametrics') {
      writeFileSync(join(w, 'scrape.yml'), scrape);
      // -search.latencyOffset: VictoriaMetrics hides the newest 30 s from queries by default;
      // the hub wants the latest samples (docs/hub.md).
      this.store = this.spawn('victoria-metrics', ['victoria-metrics', `-storageDataPath=${join(w, 'vm-data')}`,
        `-httpListenAddr=127.0.0.1:${port}`, `-promscrape.config=${join(w, 'scrape.yml')}`, '-search.latencyOffset=1s',
        '-loggerLevel=ERROR']);
    } else {
      const rules = readdirSync(join(SOURCE, 'deploy/rules')).filter((f) => f.endsWith('.yml')).map((f) => `'${join(SOURCE, 'deploy/rules', f)}'`);
      writeFileSync(join(w, 'prometheus.yml'), `${scrape.replace('scrape_timeout: 2s}', 'scrape_timeout: 2s, evaluation_interval: 2s}')}rule_files: [${rules.join(', ')}]\n`);
      this.store = this.spawn('prometheus', ['prometheus', `--config.file=${join(w, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(w, 'prom-data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=error']);
    }
    const end = Date.now() + 60000;
    while (Date.now() < end) {
      if (!this.store.running()) throw new Error(`${this.kind} exited:\n${this.store.log}`);
      try {
        const r = await fetch(`${this.storeUrl}/api/v1/query?query=1`);
        if (r.ok) return;
      } catch (e) { /* not yet */ }
      await sleep(250);
    }
    throw new Error(`${this.kind} did not answer within 60 s:\n${this.store.log}`);
  }

  async hubJson(path) {
    const res = await fetch(this.hubUrl + path);
    const body = await res.text();
    try { return { status: res.status, body: JSON.parse(body) }; } catch (e) { return { status: res.status, body }; }
  }

  // Until every node has all 8 GPUs in the store (through the hub's fleet snapshot).
  async waitForData(ms) {
    const end = Date.now() + ms;
    let last = null;
    while (Date.now() < end) {
      for (const a of this.agents) if (!a.running()) throw new Error(`${a.name} exited:\n${a.log.slice(-2000)}`);
      last = await this.hubJson('/api/snapshot').catch((e) => ({ error: e.message }));
      const nodes = last.body?.nodes || [];
      if (nodes.length === this.nodes && nodes.every((n) => n.gpus === 8)) return nodes;
      await sleep(1000);
    }
    throw new Error(`the store does not hold ${this.nodes} nodes of 8 GPUs: ${JSON.stringify(last).slice(0, 1500)}`);
  }

  async stopStore() { await this.store.stop(); }

  async stop() {
    await Promise.all([...this.children].reverse().map((c) => c.stop()));
    rmSync(this.work, { recursive: true, force: true });
  }
}
