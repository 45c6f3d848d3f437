// The demo fleet of scripts/demo-sim.sh on a stepped clock, for the layout test and
// scripts/screenshots.sh: `gpuwarden serve` on scenarios/demo.yaml with host processes as jobs
// (llm-pretrain on GPUs 0-3 for team research, notebook-alice idle on GPU 7 for analytics),
// gw-inference-sim on GPU 5 scraped as target `llm` (no job here), prices,
// quotas and a dry-run reclaim policy. startDemoFleet() advances simulated time by `minutes`
// (GPU 3's cooling failure runs from 20 to 32 min, its alerts with it) and returns
// {agent, work, stop()}; stop() ends every process it started, by PID.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, InferenceService, simMachineEnv, sleep } from './support.mjs';

const root = new URL('../..', import.meta.url).pathname;

function hostJob(workload, gpus, job, team) {
  return spawn('sleep', ['3600'], {
    stdio: 'ignore',
    env: { PATH: process.env.PATH, ...simMachineEnv(), GPUWARDEN_SIM_WORKLOAD: workload, CUDA_VISIBLE_DEVICES: gpus, GPUWARDEN_JOB: job, GPUWARDEN_TEAM: team },
  });
}

export async function startDemoFleet(binary, { minutes = 40, log = () => {} } = {}) {
  const work = mkdtempSync(join(tmpdir(), 'gw-demo-fleet-'));
  const stateDir = join(work, 'state');
  mkdirSync(stateDir);
  writeFileSync(join(work, 'demo.yaml'), `${readFileSync(join(root, 'scenarios/demo.yaml'), 'utf8')}\nhost_processes: true\nhost_scan_interval: 50ms\n`);
  const children = [];
  let llm;
  let agent;
  const stop = async () => {
    children.forEach((c) => { if (c.exitCode === null) process.kill(c.pid, 'SIGTERM'); });
    if (agent) await agent.stop();
    if (llm) await llm.stop();
    rmSync(work, { recursive: true, force: true });
  };
  try {
    llm = await InferenceService.start(binary, { gpu: 5, stateDir });
    writeFileSync(join(work, 'gpuwarden.yaml'), `jobs:
  idle_window: 10m
governance:
  reclaim:
    - {idle_for: 10m, grace: 5m, action: dry-run}
  quotas:
    research: {gpus: 3}
    product: {gpus: 2}
    analytics: {gpu_hours: 4, period: 1d}
  prices:
    gpu_hour: {H100: 2.99, A100: 1.79, H200: 3.59, L40S: 0.99, default: 1.50}
    energy_kwh: 0.15
    currency: USD
scrape:
  targets:
    - name: llm
      url: '${llm.url}'
      interval: 5s
      gpus: [5]
      outputs: 'inference_requests_total{code=~"2.."}'
      output_unit: request
`);
    children.push(hostJob('training', '0,1,2,3', 'llm-pretrain', 'research'));
    children.push(hostJob('idle_allocated', '7', 'notebook-alice', 'analytics'));
    agent = await Agent.start(binary, ['--simulate', join(work, 'demo.yaml'), '--sim-clock', 'stepped', '--config', join(work, 'gpuwarden.yaml')],
      { env: { GPUWARDEN_SIM_STATE_DIR: stateDir } });
    // The simulator sees the processes on its next scan (real time), the collector on its next
    // slow cycle (simulated time).
    let running = [];
    for (let i = 0; i < 100 && running.length < 2; i++) {
      await sleep(100);
      await agent.advance(10);
      running = (await agent.json('/api/gw/v1/jobs?running=1')).data.jobs;
    }
    if (running.length < 2) throw new Error(`the demo's jobs did not start: ${JSON.stringify(running)}\n${agent.log}`);
    for (let t = 0; t < minutes * 60; t += 120) {
      await agent.advance(120);
      if (t % 600 === 0) log(`simulated ${t / 60} min`);
    }
    return { agent, work, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
