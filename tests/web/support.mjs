// Shared by the browser tests and bench/console_paint.mjs: a real `gpuwarden serve` on
// 127.0.0.1, stepped simulated time, and Debian's chromium driven by playwright-core.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const CHROMIUM = process.env.GW_CHROMIUM || '/usr/bin/chromium';
// The simulated machine this test is (GPUWARDEN_SIM_MACHINE, set by ctest; docs/scenarios.md):
// processes spawned with a chosen environment must carry it for the simulator to see them.
export function simMachineEnv() {
  const machine = process.env.GPUWARDEN_SIM_MACHINE;
  return machine === undefined ? {} : { GPUWARDEN_SIM_MACHINE: machine };
}
export const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

// playwright-core from tests/web/node_modules (scripts/setup.sh runs `npm ci` there).
export function loadPlaywright() {
  const here = new URL('.', import.meta.url).pathname;
  if (!existsSync(join(here, 'node_modules', 'playwright-core'))) {
    throw new Error(`playwright-core is not installed in ${here}: run scripts/setup.sh (npm ci in tests/web)`);
  }
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: run scripts/setup.sh (Debian package chromium)`);
  return createRequire(join(here, 'package.json'))('playwright-core');
}

// A fresh profile directory for every browser (--user-data-dir), removed by close().
export async function launchBrowser(viewport = { width: 1440, height: 900 }) {
  const { chromium } = loadPlaywright();
  const profile = mkdtempSync(join(tmpdir(), 'gw-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS, viewport, colorScheme: 'dark',
  });
  return { context, close: async () => { await context.close(); rmSync(profile, { recursive: true, force: true }); } };
}

// Collects `child`'s stdout and stderr into `holder.log` and resolves with the port of its first
// "(port N)" line; rejects with the log when `what` exits first or says nothing for `timeoutMs`.
export function waitForPortLine(child, holder, what, timeoutMs = 30000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start:\n${holder.log}`)), timeoutMs);
    const onData = (chunk) => {
      holder.log += chunk;
      const m = /\(port (\d+)\)/.exec(holder.log);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`${what} exited with ${code}:\n${holder.log}`)); });
  });
}

export class Agent {
  // Starts `gpuwarden serve ARGS --listen 127.0.0.1:0` and waits for its "(port N)" line.
  static async start(binary, args, { env = {} } = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'gw-web-'));
    const child = spawn(binary, ['serve', '--listen', '127.0.0.1:0', '--data-dir', join(dir, 'data'), ...args], {
      env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    const agent = new Agent(child, dir);
    const port = await waitForPortLine(child, agent, 'gpuwarden');
    agent.port = port;
    agent.url = `http://127.0.0.1:${port}`;
    return agent;
  }

  constructor(child, dir) { this.child = child; this.dir = dir; this.log = ''; this.port = 0; }

  async json(path) {
    const res = await fetch(this.url + path);
    if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
    return res.json();
  }

  // Moves the stepped simulator's clock; returns when every cycle, record and rule evaluation ran.
  async advance(seconds) {
    const res = await fetch(`${this.url}/-/sim/advance?seconds=${seconds}`, { method: 'POST' });
    if (!res.ok) throw new Error(`advance ${seconds}: HTTP ${res.status} ${await res.text()}`);
  }

  async firing(gpu) {
    const alerts = (await this.json('/api/v1/alerts')).data.alerts;
    return alerts.filter((a) => a.state === 'firing' && (gpu === undefined || a.labels.gpu === String(gpu)));
  }

  async stop() {
    if (this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child.on('exit', resolve));
      this.child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

// gw-inference-sim (docs/scenarios.md) beside `binary` as a scrape target: a host process on
// simulated GPU `gpu` that follows the simulator's state files in `stateDir`, on 127.0.0.1 at the
// port it picked; stop() ends it by its PID.
export class InferenceService {
  static async start(binary, { gpu, stateDir }) {
    const path = join(dirname(binary), 'gw-inference-sim');
    if (!existsSync(path)) throw new Error(`${path} not found: build the gw-inference-sim target`);
    const child = spawn(path, ['--listen', '127.0.0.1:0'], {
      env: { PATH: process.env.PATH, ...simMachineEnv(), GPUWARDEN_SIM_WORKLOAD: 'inference', CUDA_VISIBLE_DEVICES: String(gpu), GPUWARDEN_SIM_STATE_DIR: stateDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const service = new InferenceService(child);
    service.port = await waitForPortLine(child, service, 'gw-inference-sim');
    service.url = `http://127.0.0.1:${service.port}/metrics`;
    return service;
  }

  constructor(child) { this.child = child; this.log = ''; this.port = 0; }

  async stop() {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.on('exit', resolve));
    process.kill(this.child.pid, 'SIGTERM');
    await exited;
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A real process on this machine (`sleep`) that the simulator runs as job `job` of team `team`
// on `gpus` ("0,1") with the simulated `workload` (docs/scenarios.md, host_processes).
export function hostJob(workload, gpus, job, team, seconds = 600) {
  return spawn('sleep', [String(seconds)], {
    stdio: 'ignore',
    env: { PATH: process.env.PATH, ...simMachineEnv(), GPUWARDEN_SIM_WORKLOAD: workload, CUDA_VISIBLE_DEVICES: gpus, GPUWARDEN_JOB: job, GPUWARDEN_TEAM: team },
  });
}

// Steps simulated time until the agent lists at least `n` running jobs (the simulator sees host
// processes on its next scan, in real time; the collector lists them on its next slow cycle, in
// simulated time); returns them, or throws naming the ones it saw.
export async function waitForRunningJobs(agent, n) {
  let running = [];
  for (let i = 0; i < 100 && running.length < n; i++) {
    await sleep(100);
    await agent.advance(10);
    running = (await agent.json('/api/gw/v1/jobs?running=1')).data.jobs;
  }
  if (running.length < n) throw new Error(`jobs seen: ${JSON.stringify(running.map((j) => j.job_id))}\n${agent.log}`);
  return running;
}
