/**
 * The copy of a sandbox's workspace back to the host (src/execution/workspace-copy.ts), on a tree an agent
 * could leave: links are recreated, never followed; FIFOs are left out without blocking; what is written is
 * bounded by the budget (a sparse file claiming more than it holds included); hard links stay links; a source
 * that is itself a link is refused.
 */
import { execFileSync } from 'node:child_process';
import {
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { copyTreeOut } from '../../src/execution/workspace-copy.ts';
import { sweepWorkspaces } from '../../src/execution/workspace.ts';

const MIB = 1024 * 1024;

describe('copying a workspace out of its sandbox', () => {
  let root: string;
  let source: string;
  let dest: string;
  let outside: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'agentyard-copy-'));
    source = path.join(root, 'source');
    dest = path.join(root, 'dest');
    outside = path.join(root, 'outside');
    for (const dir of [source, dest, outside]) mkdirSync(dir);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('recreates links as links and leaves FIFOs out, writing nothing outside', async () => {
    writeFileSync(path.join(outside, 'secret'), 'HOST\n');
    symlinkSync(path.join(outside, 'secret'), path.join(source, 'to-secret'));
    symlinkSync(outside, path.join(source, 'to-outside'));
    mkdirSync(path.join(source, 'sub'));
    writeFileSync(path.join(source, 'sub', 'file'), 'content');
    writeFileSync(path.join(source, '..x'), 'dots');
    execFileSync('mkfifo', [path.join(source, 'fifo')]);
    const result = await copyTreeOut(source, dest, MIB);
    expect(readdirSync(dest).sort()).toEqual(['..x', 'sub', 'to-outside', 'to-secret']);
    expect(readlinkSync(path.join(dest, 'to-secret'))).toBe(path.join(outside, 'secret'));
    expect(lstatSync(path.join(dest, 'to-outside')).isSymbolicLink()).toBe(true);
    expect(readFileSync(path.join(dest, 'sub', 'file'), 'utf8')).toBe('content');
    expect(readdirSync(outside)).toEqual(['secret']);
    expect(readFileSync(path.join(outside, 'secret'), 'utf8')).toBe('HOST\n');
    expect(result.leftOut).toEqual({ count: 1, examples: ['fifo (a FIFO)'] });
  });

  it('stops at the budget, counting what a sparse file claims, and keeps hard links', async () => {
    writeFileSync(path.join(source, 'a'), Buffer.alloc(600 * 1024, 1));
    linkSync(path.join(source, 'a'), path.join(source, 'a-link'));
    writeFileSync(path.join(source, 'b'), Buffer.alloc(600 * 1024, 2));
    // a file of 1 TiB holding nothing
    writeFileSync(path.join(source, 'sparse'), '');
    truncateSync(path.join(source, 'sparse'), 1024 ** 4);
    const result = await copyTreeOut(source, dest, MIB);
    expect(result.overBudget).toBe(true);
    expect(result.bytes).toBeLessThanOrEqual(MIB);
    expect(readdirSync(dest).sort()).toEqual(['a', 'a-link']);
    expect(statSync(path.join(dest, 'a-link')).ino).toBe(statSync(path.join(dest, 'a')).ino);
    expect(result.leftOut.examples).toEqual(['b (over the workspace limit)', 'sparse (over the workspace limit)']);
  });

  it('keeps holes as holes within the budget', async () => {
    writeFileSync(path.join(source, 'holes'), 'start');
    truncateSync(path.join(source, 'holes'), 512 * 1024);
    await copyTreeOut(source, dest, MIB);
    const copied = statSync(path.join(dest, 'holes'));
    expect(copied.size).toBe(512 * 1024);
    expect(copied.blocks * 512).toBeLessThanOrEqual(128 * 1024);
    expect(readFileSync(path.join(dest, 'holes')).subarray(0, 5).toString()).toBe('start');
  });

  it('refuses a source that is a link', async () => {
    symlinkSync(outside, path.join(root, 'link'));
    await expect(copyTreeOut(path.join(root, 'link'), dest, MIB)).rejects.toThrow(/ELOOP|ENOTDIR/);
  });

  it('a copy-out the server was stopped in is swept with its workspace', async () => {
    const id = 'exe_01jaaaaaaaaaaaaaaaaaaaaaaa';
    const other = 'exe_01jbbbbbbbbbbbbbbbbbbbbbbb';
    for (const name of [`${id}.copy-out`, `${id}.replaced`, other, `${other}.copy-out`, 'unrelated.copy-out'])
      mkdirSync(path.join(root, name));
    const removed = await sweepWorkspaces(root, (executionId) => executionId === other);
    expect(removed.sort()).toEqual([`${id}.copy-out`, `${id}.replaced`]);
    expect(readdirSync(root).sort()).toEqual([
      'dest',
      other,
      `${other}.copy-out`,
      'outside',
      'source',
      'unrelated.copy-out',
    ]);
  });
});
