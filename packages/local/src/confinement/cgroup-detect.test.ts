import { describe, expect, it } from 'vitest';
import { detectCgroups, parseMountinfo, type CgroupDetectionSource } from './cgroup-detect.js';

const V2_MOUNT =
  '30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate';
const v1Mount = (ctrl: string, ro = false): string =>
  `40 31 0:40 / /sys/fs/cgroup/${ctrl} ${ro ? 'ro' : 'rw'},relatime - cgroup cgroup rw,${ctrl}`;

/** A host described by its files; `writable` lists the files this user may write. */
function host(
  files: Record<string, string>,
  writable: string[] = [],
  pid = 4242,
): CgroupDetectionSource {
  return {
    readFile: async (f) => files[f],
    writable: async (f) => writable.includes(f),
    pid,
  };
}

const SERVICE = '/sys/fs/cgroup/system.slice/gw.service';

describe('detectCgroups', () => {
  it('uses a delegated v2 cgroup whose controllers are enabled below it', async () => {
    const d = await detectCgroups(
      host(
        {
          '/proc/self/mountinfo': V2_MOUNT,
          '/proc/self/cgroup': '0::/system.slice/gw.service\n',
          [`${SERVICE}/cgroup.controllers`]: 'cpuset cpu io memory pids\n',
          [`${SERVICE}/cgroup.subtree_control`]: 'cpu memory pids\n',
          [`${SERVICE}/cgroup.type`]: 'domain\n',
          [`${SERVICE}/cgroup.procs`]: '',
        },
        [
          SERVICE,
          `${SERVICE}/cgroup.subtree_control`,
          `${SERVICE}/cgroup.procs`,
          `${SERVICE}/cgroup.kill`,
        ],
      ),
    );
    expect(d.layout).toEqual({
      version: 'v2',
      dir: SERVICE,
      placement: 'own',
      controllers: ['pids', 'memory', 'cpu'],
      kill: true,
      gatewayMustMove: false,
    });
  });

  it('moves the gateway into a leaf when it is alone in its v2 cgroup', async () => {
    const d = await detectCgroups(
      host(
        {
          '/proc/self/mountinfo': V2_MOUNT,
          '/proc/self/cgroup': '0::/system.slice/gw.service\n',
          [`${SERVICE}/cgroup.controllers`]: 'memory pids\n',
          [`${SERVICE}/cgroup.subtree_control`]: '\n',
          [`${SERVICE}/cgroup.type`]: 'domain\n',
          [`${SERVICE}/cgroup.procs`]: '4242\n',
        },
        [SERVICE, `${SERVICE}/cgroup.subtree_control`, `${SERVICE}/cgroup.procs`],
      ),
    );
    expect(d.layout).toMatchObject({
      version: 'v2',
      gatewayMustMove: true,
      controllers: ['pids', 'memory'],
      kill: false,
    });
  });

  it('refuses a v2 cgroup shared with other processes, saying how to delegate one', async () => {
    const d = await detectCgroups(
      host(
        {
          '/proc/self/mountinfo': V2_MOUNT,
          '/proc/self/cgroup': '0::/user.slice/session-1.scope\n',
          '/sys/fs/cgroup/user.slice/session-1.scope/cgroup.controllers': 'memory pids\n',
          '/sys/fs/cgroup/user.slice/session-1.scope/cgroup.subtree_control': '',
          '/sys/fs/cgroup/user.slice/session-1.scope/cgroup.type': 'domain\n',
          '/sys/fs/cgroup/user.slice/session-1.scope/cgroup.procs': '4242\n977\n',
        },
        [
          '/sys/fs/cgroup/user.slice/session-1.scope',
          '/sys/fs/cgroup/user.slice/session-1.scope/cgroup.subtree_control',
          '/sys/fs/cgroup/user.slice/session-1.scope/cgroup.procs',
        ],
      ),
    );
    expect(d.layout).toBeUndefined();
    expect(d.notes.join('\n')).toMatch(/1 other process.*Delegate=yes/);
  });

  it("uses the hierarchy's top when the own cgroup is shared and the top is root's to write", async () => {
    const d = await detectCgroups(
      host(
        {
          '/proc/self/mountinfo': V2_MOUNT,
          '/proc/self/cgroup': '0::/system.slice/runner.service\n',
          '/sys/fs/cgroup/system.slice/runner.service/cgroup.controllers': 'memory pids\n',
          '/sys/fs/cgroup/system.slice/runner.service/cgroup.subtree_control': '',
          '/sys/fs/cgroup/system.slice/runner.service/cgroup.type': 'domain\n',
          '/sys/fs/cgroup/system.slice/runner.service/cgroup.procs': '4242\n977\n',
          '/sys/fs/cgroup/cgroup.controllers': 'cpuset cpu io memory pids\n',
          '/sys/fs/cgroup/cgroup.subtree_control': 'cpu memory pids\n',
        },
        [
          '/sys/fs/cgroup/system.slice/runner.service',
          '/sys/fs/cgroup/system.slice/runner.service/cgroup.subtree_control',
          '/sys/fs/cgroup',
          '/sys/fs/cgroup/cgroup.subtree_control',
          '/sys/fs/cgroup/cgroup.kill',
        ],
      ),
    );
    expect(d.layout).toMatchObject({
      version: 'v2',
      dir: '/sys/fs/cgroup',
      placement: 'top',
      gatewayMustMove: false,
    });
    expect(d.notes.join()).toMatch(/runner.service holds 1 other process/);
  });

  it("never moves processes at a container's top that holds them", async () => {
    const d = await detectCgroups(
      host(
        {
          '/proc/self/mountinfo': V2_MOUNT,
          '/proc/self/cgroup': '0::/app\n',
          '/sys/fs/cgroup/app/cgroup.controllers': 'memory pids\n',
          '/sys/fs/cgroup/app/cgroup.subtree_control': '',
          '/sys/fs/cgroup/app/cgroup.type': 'domain\n',
          '/sys/fs/cgroup/app/cgroup.procs': '4242\n977\n',
          '/sys/fs/cgroup/cgroup.controllers': 'memory pids\n',
          '/sys/fs/cgroup/cgroup.subtree_control': '',
          '/sys/fs/cgroup/cgroup.type': 'domain\n',
          '/sys/fs/cgroup/cgroup.procs': '4242\n',
        },
        [
          '/sys/fs/cgroup/app',
          '/sys/fs/cgroup/app/cgroup.subtree_control',
          '/sys/fs/cgroup',
          '/sys/fs/cgroup/cgroup.subtree_control',
        ],
      ),
    );
    expect(d.layout).toBeUndefined();
  });

  it('says so when the v2 cgroup is not writable, and when no controller is delegated', async () => {
    const files = {
      '/proc/self/mountinfo': V2_MOUNT,
      '/proc/self/cgroup': '0::/\n',
      '/sys/fs/cgroup/cgroup.controllers': 'memory pids\n',
    };
    expect((await detectCgroups(host(files))).notes.join()).toMatch(/not writable/);
    const none = await detectCgroups(host({ ...files, '/sys/fs/cgroup/cgroup.controllers': '' }));
    expect(none.layout).toBeUndefined();
    expect(none.notes.join()).toMatch(/no pids, memory or cpu controller/);
  });

  it('uses the writable v1 hierarchies when the unified one has no controllers', async () => {
    const mountinfo = [
      v1Mount('pids'),
      v1Mount('memory'),
      v1Mount('freezer'),
      v1Mount('cpu', true),
      '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
    ].join('\n');
    const d = await detectCgroups(
      host(
        {
          '/proc/self/mountinfo': mountinfo,
          '/proc/self/cgroup': '8:pids:/\n4:memory:/a/b\n0::/\n',
          '/sys/fs/cgroup/unified/cgroup.controllers': '',
        },
        [
          '/sys/fs/cgroup/pids/cgroup.procs',
          '/sys/fs/cgroup/memory/cgroup.procs',
          '/sys/fs/cgroup/freezer/cgroup.procs',
          '/sys/fs/cgroup/cpu/cgroup.procs',
        ],
      ),
    );
    expect(d.layout).toEqual({
      version: 'v1',
      hierarchies: [
        { controller: 'pids', dir: '/sys/fs/cgroup/pids' },
        { controller: 'memory', dir: '/sys/fs/cgroup/memory' },
        { controller: 'freezer', dir: '/sys/fs/cgroup/freezer' },
      ],
      controllers: ['pids', 'memory'],
      freezer: true,
    });
    expect(d.notes.join('\n')).toMatch(/cgroup v1 cpu: .* not writable/);
  });

  it('reports no cgroups without /proc or without a cgroup mount', async () => {
    expect(await detectCgroups(host({}))).toEqual({
      layout: undefined,
      notes: ['no /proc/self/cgroup: this host has no cgroups'],
    });
    const d = await detectCgroups(
      host({ '/proc/self/mountinfo': '', '/proc/self/cgroup': '0::/\n' }),
    );
    expect(d).toEqual({ layout: undefined, notes: ['no cgroup filesystem is mounted'] });
  });

  it('does not place a v2 group outside the subtree a container mounted', async () => {
    const d = await detectCgroups(
      host({
        '/proc/self/mountinfo': '30 23 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw',
        '/proc/self/cgroup': '0::/system.slice/other\n',
      }),
    );
    expect(d.layout).toBeUndefined();
    expect(d.notes.join()).toMatch(/not visible/);
  });
});

describe('parseMountinfo', () => {
  it('reads escaped mount points and the read-only flag', () => {
    const [entry] = parseMountinfo(
      '50 31 0:41 / /mnt/cg\\040v1 ro,relatime - cgroup cgroup rw,pids',
    );
    expect(entry).toMatchObject({
      mountPoint: '/mnt/cg v1',
      readOnly: true,
      superOptions: ['rw', 'pids'],
    });
  });
});
