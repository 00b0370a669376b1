/**
 * bench/control-steps.ts `--profile <dir>`: the directory is made when it is not there yet (it
 * failed with ENOENT), and holds the CPU profile of the workload's timed runs; the figures carry its
 * breakdown by part.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchControlSteps } from '../../bench/control-steps.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'stepthread-control-profile-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('control-steps --profile', () => {
  it('makes the profile directory, nested and not there yet, and writes the workload profile in it', async () => {
    const profileDir = join(dir, 'not', 'there', 'yet');
    const figures = await benchControlSteps({
      runs: 1,
      turns: 1,
      messages: 1,
      only: 'chat',
      withoutLangGraph: true,
      profileDir,
    });
    expect(figures.chat).toBeDefined();
    const profile = JSON.parse(await readFile(join(profileDir, 'chat.cpuprofile'), 'utf8')) as {
      nodes: unknown[];
    };
    expect(profile.nodes.length).toBeGreaterThan(0);
    // The breakdown by part covers the whole, and the stores' emulators and stepthread's code are in it.
    const shares = Object.values(figures.chat!.profile!);
    expect(shares.reduce((sum, share) => sum + share, 0)).toBeCloseTo(1);
    expect(figures.chat!.profile!['DynamoDB emulator (dynalite, level)']).toBeGreaterThan(0);
    expect(figures.chat!.profile!["stepthread's handlers, stores and engine"]).toBeGreaterThan(0);
  }, 120_000);
});
