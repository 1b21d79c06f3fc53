import { describe, expect, it } from 'vitest';
import { isForeignPid, killCgroupMembers, parseCgroupProcs } from './cgroup-kill.js';
import { sandboxCgroupSegment, parseGatewaySegment, gatewaySegment } from './cgroup-names.js';

describe('parseCgroupProcs', () => {
  it('never yields 0 (another pid namespace), 1 (init) or this process', () => {
    // kill(0) would signal the gateway's own process group.
    expect(parseCgroupProcs('0\n1\n77\n4242\n\n 99 \n-5\n12x\n', 4242)).toEqual([77, 99]);
  });
});

describe('isForeignPid', () => {
  it('refuses 0, 1, negative, fractional and own pids: what addPid and every kill check', () => {
    for (const pid of [0, 1, -1, -4242, 1.5, Number.NaN, 4242])
      expect(isForeignPid(pid, 4242)).toBe(false);
    expect(isForeignPid(2, 4242)).toBe(true);
  });
});

describe('killCgroupMembers', () => {
  it('kills until no member is left, including children forked between the rounds', async () => {
    // A member that forks once, between the read and the kill.
    let members = [10];
    const killed: number[] = [];
    const left = await killCgroupMembers({
      members: async () => members,
      kill: (pid) => {
        killed.push(pid);
        members = members.filter((p) => p !== pid);
        if (pid === 10) members.push(11);
      },
      pause: async () => {},
      maxRounds: 10,
    });
    expect(left).toEqual([]);
    expect(killed).toEqual([10, 11]);
  });

  it('gives up after its rounds and returns who is left', async () => {
    const left = await killCgroupMembers({
      members: async () => [7],
      kill: () => {
        const err = new Error('gone') as Error & { code: string };
        err.code = 'ESRCH';
        throw err;
      },
      pause: async () => {},
      maxRounds: 3,
    });
    expect(left).toEqual([7]);
  });
});

describe('cgroup names', () => {
  it('hashes every sandbox name into one safe segment, whatever it contains', () => {
    const hostile = Buffer.from('Li4vLi4vLi4vY2dyb3VwLnByb2Nz', 'base64').toString(); // ../../../cgroup.procs
    for (const name of [hostile, 'local:u/policy:t', 'tasks', 'a\nb', '.', '..']) {
      expect(sandboxCgroupSegment(name)).toMatch(/^sb-[0-9a-f]{32}$/);
    }
    expect(sandboxCgroupSegment('a')).not.toBe(sandboxCgroupSegment('b'));
    expect(() => sandboxCgroupSegment('')).toThrow(/1 to 1024/);
    expect(() => sandboxCgroupSegment('x'.repeat(1025))).toThrow(/1 to 1024/);
    expect(() => sandboxCgroupSegment(7 as unknown as string)).toThrow(/1 to 1024/);
  });

  it('reads back only gateway segments it could have written', () => {
    const id = { pidNamespace: '4026531836', pid: 123, start: '987654' };
    expect(parseGatewaySegment(gatewaySegment(id))).toEqual(id);
    for (const s of ['g-1-2', 'g-1-2-3/..', 'sb-abc', 'g-a-2-3', 'g-1-2-3 ']) {
      expect(parseGatewaySegment(s)).toBeUndefined();
    }
  });
});
