import { describe, expect, it } from 'vitest';
import type { CgroupDetectionSource } from './cgroup-detect.js';
import { resolveConfinementLimits } from './cgroup-limits.js';
import type { ProbeHost, ProbeRun } from './confinement-probe-host.js';
import {
  probeConfinementHost,
  type ConfinementCheck,
  type ConfinementReport,
} from './confinement-probe.js';

interface Described {
  readonly uid?: number;
  readonly files?: Record<string, string>;
  readonly executables?: string[];
  readonly runs?: Record<string, ProbeRun>;
}

const OK_FILES: Record<string, string> = {
  '/proc/self/status': 'Name:\tnode\nSeccomp:\t0\nSeccomp_filters:\t0\n',
  '/proc/sys/kernel/seccomp/actions_avail':
    'kill_process kill_thread trap errno user_notif trace log allow\n',
  '/proc/sys/user/max_user_namespaces': '63000\n',
};
const VERSION: ProbeRun = { status: 0, stdout: 'bubblewrap 0.9.0\n', stderr: '' };
const RAN: ProbeRun = { status: 0, stdout: '', stderr: '' };
const EPERM: ProbeRun = {
  status: 1,
  stdout: '',
  stderr:
    "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl kernel.unprivileged_userns_clone=1'.\n",
};

/** A described host: the files it has, the programs it can run and what each run answers. */
function host(d: Described): ProbeHost {
  return {
    platform: 'linux',
    uid: d.uid ?? 1000,
    readFile: async (f) => ({ ...OK_FILES, ...d.files })[f],
    executable: async (f) => (d.executables ?? ['/usr/bin/bwrap']).includes(f),
    run: async (file, args) => {
      const key = `${file} ${args.join(' ')}`;
      const answer =
        { '/usr/bin/bwrap --version': VERSION, ...d.runs }[key] ?? d.runs?.[args[0] ?? ''];
      if (!answer) throw new Error(`unexpected run: ${key}`);
      return answer;
    },
  };
}

const USERNS = '/usr/bin/bwrap --unshare-user --ro-bind / / true';
const noCgroups: CgroupDetectionSource = {
  readFile: async () => undefined,
  writable: async () => false,
  pid: 1,
};

async function probe(d: Described): Promise<ConfinementReport> {
  return probeConfinementHost({ host: host(d), cgroupSource: noCgroups });
}

function row(report: ConfinementReport, id: ConfinementCheck['id']): ConfinementCheck {
  const found = report.checks.find((c) => c.id === id);
  if (!found) throw new Error(`no ${id}`);
  return found;
}

describe('probeConfinementHost on described hosts', () => {
  it('passes bubblewrap and user namespaces where bwrap runs', async () => {
    const r = await probe({ runs: { [USERNS]: RAN } });
    expect(row(r, 'confinement.bwrap')).toMatchObject({
      status: 'ok',
      detail: 'bubblewrap 0.9.0 at /usr/bin/bwrap',
    });
    expect(row(r, 'confinement.userns').status).toBe('ok');
    expect(row(r, 'confinement.seccomp').status).toBe('ok');
    expect(r.bwrap).toEqual({ path: '/usr/bin/bwrap', version: '0.9.0' });
  });

  it('fails without bubblewrap, with the install command, and skips the namespace check', async () => {
    const r = await probe({ executables: [] });
    expect(row(r, 'confinement.bwrap')).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining('sudo apt install bubblewrap'),
    });
    expect(row(r, 'confinement.userns').status).toBe('skip');
  });

  it("names Ubuntu 24.04's AppArmor restriction and the profile that lifts it", async () => {
    const r = await probe({
      files: { '/proc/sys/kernel/apparmor_restrict_unprivileged_userns': '1\n' },
      runs: {
        [USERNS]: {
          status: 1,
          stdout: '',
          stderr: 'bwrap: setting up uid map: Permission denied\n',
        },
      },
    });
    const userns = row(r, 'confinement.userns');
    expect(userns.status).toBe('fail');
    expect(userns.detail).toMatch(/AppArmor restricts unprivileged user namespaces/);
    expect(userns.fix).toMatch(
      /profile bwrap \/usr\/bin\/bwrap flags=\(unconfined\) \{ userns, \}/,
    );
    expect(userns.fix).toMatch(/sysctl -w kernel.apparmor_restrict_unprivileged_userns=0/);
  });

  it("tries a root gateway's namespaces as its sandbox user, whom AppArmor does restrict", async () => {
    const asked: unknown[] = [];
    const described = host({
      uid: 0,
      files: { '/proc/sys/kernel/apparmor_restrict_unprivileged_userns': '1\n' },
      runs: {
        [USERNS]: {
          status: 1,
          stdout: '',
          stderr: 'bwrap: setting up uid map: Permission denied\n',
        },
      },
    });
    const r = await probeConfinementHost({
      host: {
        ...described,
        run: async (file, args, as) => {
          asked.push(as);
          return described.run(file, args, as);
        },
      },
      cgroupSource: noCgroups,
      owner: { uid: 1234 },
    });
    expect(asked).toContainEqual({ uid: 1234, gid: 65534 });
    expect(row(r, 'confinement.userns')).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(
        /AppArmor restricts .* as uid 1234 \(the sandbox user of a root gateway\)$/,
      ),
    });
  });

  it("tries a non-root gateway's namespaces as itself", async () => {
    const asked: unknown[] = [];
    const described = host({ runs: { [USERNS]: RAN } });
    await probeConfinementHost({
      host: { ...described, run: async (f, a, as) => (asked.push(as), described.run(f, a, as)) },
      cgroupSource: noCgroups,
      owner: { uid: 1234 },
    });
    expect(asked).toEqual([undefined, undefined]);
  });

  it('names kernel.unprivileged_userns_clone = 0', async () => {
    const r = await probe({
      files: { '/proc/sys/kernel/unprivileged_userns_clone': '0\n' },
      runs: { [USERNS]: EPERM },
    });
    expect(row(r, 'confinement.userns')).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining('sysctl -w kernel.unprivileged_userns_clone=1'),
    });
  });

  it('names user.max_user_namespaces = 0, for root as well', async () => {
    const r = await probe({
      uid: 0,
      files: { '/proc/sys/user/max_user_namespaces': '0\n' },
      runs: {
        [USERNS]: {
          status: 1,
          stdout: '',
          stderr: 'bwrap: Creating new namespace failed: No space left on device\n',
        },
      },
    });
    expect(row(r, 'confinement.userns')).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('user.max_user_namespaces = 0'),
      fix: expect.stringContaining('sysctl -w user.max_user_namespaces=15000'),
    });
  });

  it("names a container runtime's profile that refuses unshare, with the Docker flags", async () => {
    const r = await probe({
      uid: 0,
      files: { '/.dockerenv': '' },
      runs: {
        [USERNS]: {
          status: 1,
          stdout: '',
          stderr: 'bwrap: Creating new namespace failed: Operation not permitted\n',
        },
      },
    });
    expect(row(r, 'confinement.userns')).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('docker container'),
      fix: expect.stringContaining('--security-opt seccomp=unconfined'),
    });
  });

  it('gives Kubernetes pods the securityContext change', async () => {
    const r = await probe({
      files: { '/proc/1/cgroup': '0::/kubepods/besteffort/pod1/abc\n' },
      runs: { [USERNS]: EPERM },
    });
    expect(row(r, 'confinement.userns').fix).toMatch(/seccompProfile.type: Unconfined/);
  });

  it('fails seccomp on a kernel without it, and on one without filter actions', async () => {
    const none = await probe({
      files: { '/proc/self/status': 'Name:\tnode\n' },
      runs: { [USERNS]: RAN },
    });
    expect(row(none, 'confinement.seccomp')).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining('CONFIG_SECCOMP'),
    });
    const noFilter = await probe({
      files: { '/proc/sys/kernel/seccomp/actions_avail': '' },
      runs: { [USERNS]: RAN },
    });
    expect(row(noFilter, 'confinement.seccomp')).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('errno, allow'),
    });
  });

  it('notes a filter a container already applies', async () => {
    const r = await probe({
      files: { '/proc/self/status': 'Seccomp:\t2\n' },
      runs: { [USERNS]: RAN },
    });
    expect(row(r, 'confinement.seccomp')).toMatchObject({
      status: 'ok',
      detail: expect.stringContaining('already runs under a filter'),
    });
  });

  it('fails cgroups without a usable hierarchy and says which limits remain', async () => {
    const r = await probe({ runs: { [USERNS]: RAN } });
    expect(row(r, 'confinement.cgroups')).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining(''),
    });
    expect(row(r, 'confinement.limits').detail).toBe(
      'pids 512 (not enforced); memory 2 GiB (rlimit data (per process)); cpu 1 core (not enforced); /tmp 512 MiB (tmpfs size); file size 4 GiB (rlimit fsize (per process))',
    );
  });

  it('tells a delegated-cgroup fix when the v2 cgroup is shared', async () => {
    const source: CgroupDetectionSource = {
      pid: 10,
      writable: async () => true,
      readFile: async (f) =>
        ({
          '/proc/self/mountinfo': '30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw',
          '/proc/self/cgroup': '0::/user.slice\n',
          '/sys/fs/cgroup/user.slice/cgroup.controllers': 'pids memory\n',
          '/sys/fs/cgroup/user.slice/cgroup.subtree_control': '',
          '/sys/fs/cgroup/user.slice/cgroup.type': 'domain',
          '/sys/fs/cgroup/user.slice/cgroup.procs': '10\n11\n',
        })[f],
    };
    const r = await probeConfinementHost({
      host: host({ runs: { [USERNS]: RAN } }),
      cgroupSource: source,
    });
    expect(row(r, 'confinement.cgroups')).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining('Delegate=yes'),
    });
  });

  it('skips everything but one line off Linux', async () => {
    const r = await probeConfinementHost({ host: { ...host({}), platform: 'darwin' } });
    expect(r.checks).toEqual([
      expect.objectContaining({ status: 'skip', detail: expect.stringContaining('Seatbelt') }),
    ]);
  });
});

describe('probeConfinementHost on this machine', () => {
  it('runs every probe for real and reports the configured limits', async () => {
    const r = await probeConfinementHost({ limits: resolveConfinementLimits({ pids: 100 }) });
    expect(r.checks.map((c) => c.id)).toEqual([
      'confinement.bwrap',
      'confinement.userns',
      'confinement.seccomp',
      'confinement.cgroups',
      'confinement.limits',
    ]);
    for (const c of r.checks) {
      expect(c.detail).not.toBe('');
      if (c.status === 'fail') expect(c.fix).toBeTruthy();
    }
    expect(row(r, 'confinement.limits').detail).toMatch(/^pids 100 /);
    console.info(r.checks.map((c) => `${c.status} ${c.title}: ${c.detail}`).join('\n'));
  }, 60_000);
});
