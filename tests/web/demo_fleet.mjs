// The demo fleet of scripts/demo-sim.sh on a stepped clock, for the layout test and
// scripts/screenshots.sh: `gpuwarden serve` on scenarios/demo.yaml with host processes as jobs
// (llm-pretrain on GPUs 0-3 for team research, notebook-alice idle on GPU 7 for analytics),
// gw-inference-sim on GPU 5 scraped as target `llm` (no job here), prices,
// quotas and a dry-run reclaim policy. startDemoFleet() advances simulated time by `minutes`
// (GPU 3's cooling failure runs from 20 to 32 min, its alerts with it) and returns
// {agent, work, stop()}; stop() ends every process it started, by PID.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, hostJob, InferenceService, waitForRunningJobs } from './support.mjs';

const root = new URL('../..', import.meta.url).pathname;

// scripts/demo-sim.sh's configuration (its `cat >"$work/gpuwarden.yaml" <<YAML` block), with the
// inference service's port: the same prices, quotas, reclaim policy and scrape target.
function demoConfig(port) {
  const script = readFileSync(join(root, 'scripts/demo-sim.sh'), 'utf8');
  const m = /<<YAML\n([\s\S]*?)\nYAML\n/.exec(script);
  if (!m) throw new Error('scripts/demo-sim.sh has no <<YAML block with the demo configuration');
  return `${m[1].replaceAll('$port', port)}\n`;
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
    writeFileSync(join(work, 'gpuwarden.yaml'), demoConfig(new URL(llm.url).port));
    children.push(hostJob('training', '0,1,2,3', 'llm-pretrain', 'research', 3600));
    children.push(hostJob('idle_allocated', '7', 'notebook-alice', 'analytics', 3600));
    agent = await Agent.start(binary, ['--simulate', join(work, 'demo.yaml'), '--sim-clock', 'stepped', '--config', join(work, 'gpuwarden.yaml')],
      { env: { GPUWARDEN_SIM_STATE_DIR: stateDir } });
    await waitForRunningJobs(agent, 2);
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
