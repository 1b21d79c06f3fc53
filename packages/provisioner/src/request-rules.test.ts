import { provisionerExtraMountPaths } from '@sbx/core';
import { PROVISIONER_MAX_EXTRA_MOUNTS, PROVISIONER_THREAD_ID_PATTERN } from '@sbx/core/internal';
import { describe, expect, it } from 'vitest';
import { parseCreateRequest } from './create-request.js';
import { safeSubPath, validateExtraMounts } from './extra-mount-rules.js';
import { ProvisionerHttpError } from './provisioner-errors.js';

const BASE = '/data/sbx';
/** The request's own user and thread, and the former threads directory below the base. */
const TENANCY = { userId: 'u', threadId: 't', legacyThreadsDir: 'threads' };

function statusOf(fn: () => unknown): number | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof ProvisionerHttpError) return err.status;
    throw err;
  }
  return undefined;
}

describe('create request validation', () => {
  it('§9.5.73 the thread id pattern is the gateway’s: rejects "", dots, traversal and 65 characters', () => {
    for (const bad of ['', 'thread.with.dot', '../escape', 'a'.repeat(65)]) {
      expect(statusOf(() => parseCreateRequest({ sandbox_id: 'x1', thread_id: bad }))).toBe(422);
    }
    for (const good of ['a', 'A1_b-2', 'a'.repeat(64)]) {
      expect(parseCreateRequest({ sandbox_id: 'x1', thread_id: good }).threadId).toBe(good);
      expect(PROVISIONER_THREAD_ID_PATTERN.test(good)).toBe(true);
    }
  });

  it('an anonymous create is its own thread; the user defaults to "default"; unknown fields are ignored', () => {
    const r = parseCreateRequest({ sandbox_id: 'abc', thread_id: null, newer_field: 1 });
    expect(r).toMatchObject({
      sandboxId: 'abc',
      threadId: 'abc',
      userId: 'default',
      skillsRoot: '/mnt/skills',
    });
  });

  it('refuses sandbox ids that cannot name a Pod and Service before anything is created', () => {
    for (const bad of ['', 'Upper', 'a_b', 'a'.repeat(52), '-lead', 'trail-', '../x', 'a.b']) {
      expect(statusOf(() => parseCreateRequest({ sandbox_id: bad }))).toBe(422);
    }
    expect(parseCreateRequest({ sandbox_id: 'a'.repeat(51) }).sandboxId).toHaveLength(51);
  });

  it('lists every field problem in the 422 detail', () => {
    try {
      parseCreateRequest({ sandbox_id: 7, user_id: '../root', extra_mounts: [{ host_path: 1 }] });
      expect.unreachable();
    } catch (err) {
      const detail = (err as ProvisionerHttpError).detail as readonly { loc: unknown[] }[];
      expect(detail.map((p) => p.loc.join('.'))).toEqual(
        expect.arrayContaining([
          'body.sandbox_id',
          'body.user_id',
          'body.extra_mounts.0.host_path',
        ]),
      );
    }
  });

  it('refuses a skills root that is not canonical or overlaps a platform mount', () => {
    for (const root of ['skills', '/mnt/user-data/skills', '/mnt/../etc', '/']) {
      expect(
        statusOf(() => parseCreateRequest({ sandbox_id: 'a', skills_container_path: root })),
      ).toBe(422);
    }
  });
});

describe('extra mount rules', () => {
  const ok = (containerPath: string, hostPath = `${BASE}/x`) => ({
    hostPath,
    containerPath,
    readOnly: false,
  });

  it('§9.5.62 the provisioner accepts exactly the gateway’s allowlist (one literal), runtime and config/locks included; at most 10', () => {
    const paths = provisionerExtraMountPaths();
    expect(paths).toEqual(
      expect.arrayContaining([
        '/mnt/integrations/lark-cli/runtime',
        '/mnt/integrations/lark-cli/config/locks',
      ]),
    );
    expect(PROVISIONER_MAX_EXTRA_MOUNTS).toBe(10);
    expect(
      validateExtraMounts(
        paths.map((p) => ok(p)),
        BASE,
        '/mnt/skills',
        TENANCY,
      ),
    ).toHaveLength(paths.length);
    for (const gatewayDrops of ['/mnt/user-data/workspace', '/mnt/skills']) {
      expect(
        statusOf(() => validateExtraMounts([ok(gatewayDrops)], BASE, '/mnt/skills', TENANCY)),
      ).toBe(400);
    }
  });

  it('§9.5.69 a host path outside the state root (/etc) or an unknown container path (/mnt/secrets) is a 400', () => {
    expect(
      statusOf(() =>
        validateExtraMounts([ok('/mnt/acp-workspace', '/etc')], BASE, '/mnt/skills', TENANCY),
      ),
    ).toBe(400);
    expect(
      statusOf(() => validateExtraMounts([ok('/mnt/secrets')], BASE, '/mnt/skills', TENANCY)),
    ).toBe(400);
  });

  it('compares by path segments after normalising, so a sibling prefix or a climb out is refused', () => {
    for (const host of [
      `${BASE}-evil/x`,
      `${BASE}/..`,
      `${BASE}/../etc`,
      `${BASE}/a/../../../etc`,
      BASE,
      'relative/x',
      `${BASE}/x\0`,
    ]) {
      expect(
        statusOf(() =>
          validateExtraMounts([ok('/mnt/acp-workspace', host)], BASE, '/mnt/skills', TENANCY),
        ),
      ).toBe(400);
    }
    expect(
      validateExtraMounts(
        [ok('/mnt/acp-workspace/', `${BASE}//a/./b/`)],
        BASE,
        '/mnt/skills',
        TENANCY,
      )[0],
    ).toMatchObject({
      hostPath: `${BASE}/a/b`,
      containerPath: '/mnt/acp-workspace',
      relativeHostPath: 'a/b',
    });
  });

  it('refuses a host path inside thread user data, where agents can plant symlinks the kubelet would follow', () => {
    for (const host of [
      `${BASE}/threads/t1/user-data/escape`,
      `${BASE}/users/u/threads/t/user-data`,
    ]) {
      expect(
        statusOf(() =>
          validateExtraMounts([ok('/mnt/acp-workspace', host)], BASE, '/mnt/skills', TENANCY),
        ),
      ).toBe(400);
    }
    expect(
      validateExtraMounts(
        [ok('/mnt/acp-workspace', `${BASE}/users/u/threads/t/acp-workspace`)],
        BASE,
        '/mnt/skills',
        TENANCY,
      ),
    ).toHaveLength(1);
  });

  it('attack: a parent of the user data (every tenant at once) is refused read-write and read-only, however it is spelled', () => {
    // Spelled at run time: `..`, repeated and trailing slashes, `.` segments.
    const spellings = (dir: string) => [
      dir,
      `${dir}/`,
      `${dir}//`,
      dir.replace(/\//g, '//'),
      `${dir}/./`,
      `${dir}/x/..`,
      `${BASE}/nothing/../${dir.slice(BASE.length + 1)}`,
    ];
    const parents = [
      `${BASE}/threads`, // the former THREADS_HOST_PATH: every thread's user data
      `${BASE}/users`, // every user
      `${BASE}/users/u`, // the user's root: all its threads' user data
      `${BASE}/users/u/threads`,
      `${BASE}/users/u/threads/t`, // contains the thread's own user data, read-write
      `${BASE}/skills_view`,
      `${BASE}/users/u/skills_view`,
      `${BASE}/users/u/threads/t/skills_view`,
    ];
    for (const parent of parents) {
      for (const host of spellings(parent)) {
        for (const readOnly of [false, true]) {
          const mount = { ...ok('/mnt/acp-workspace', host), readOnly };
          expect(
            statusOf(() => validateExtraMounts([mount], BASE, '/mnt/skills', TENANCY)),
            `${host} ${readOnly ? 'ro' : 'rw'}`,
          ).toBe(400);
        }
      }
    }
  });

  it('attack: nothing inside another tenant’s root or the former threads directory is mountable', () => {
    for (const host of [
      `${BASE}/users/bob/threads/t/acp-workspace`, // another user, same thread id
      `${BASE}/users/bob/skills_view/custom`,
      `${BASE}/users/bob/integrations/lark-cli/config`,
      `${BASE}/users/u/threads/other/acp-workspace`, // another thread of the same user
      `${BASE}/users/u/threads/other/skills_view/custom`,
      `${BASE}/threads/t/acp-workspace`,
      `${BASE}/users/u/x/../../bob/skills_view/custom`,
    ]) {
      expect(
        statusOf(() =>
          validateExtraMounts([ok('/mnt/acp-workspace', host)], BASE, '/mnt/skills', TENANCY),
        ),
        host,
      ).toBe(400);
    }
  });

  it('the request’s own ACP workspace, skills categories and integration directories stay mountable', () => {
    const own = [
      ok('/mnt/acp-workspace', `${BASE}/users/u/threads/t/acp-workspace`),
      ok('/mnt/skills/public', `${BASE}/skills_view/public`),
      ok('/mnt/skills/custom', `${BASE}/users/u/skills_view/custom`),
      ok('/mnt/skills/legacy', `${BASE}/users/u/threads/t/skills_view/legacy/`),
      ok('/mnt/integrations/lark-cli/config', `${BASE}/users/u/integrations/lark-cli/config`),
      ok('/mnt/integrations/lark-cli/data', `${BASE}/shared/lark-data`),
    ];
    expect(validateExtraMounts(own, BASE, '/mnt/skills', TENANCY)).toHaveLength(own.length);
  });

  it('refuses more than ten, the same container path twice, and any mount when there is no host base', () => {
    const eleven = Array.from({ length: 11 }, () => ok('/mnt/acp-workspace'));
    expect(() => validateExtraMounts(eleven, BASE, '/mnt/skills', TENANCY)).toThrow(
      /at most 10 extra mounts/,
    );
    expect(
      statusOf(() =>
        validateExtraMounts(
          [ok('/mnt/acp-workspace'), ok('/mnt/acp-workspace/')],
          BASE,
          '/mnt/skills',
          TENANCY,
        ),
      ),
    ).toBe(400);
    expect(
      statusOf(() => validateExtraMounts([ok('/mnt/acp-workspace')], '', '/mnt/skills', TENANCY)),
    ).toBe(400);
    expect(validateExtraMounts([], '', '/mnt/skills', TENANCY)).toEqual([]);
  });

  it('derives the allowlist from the request’s skills root', () => {
    expect(
      validateExtraMounts([ok('/opt/skills/custom')], BASE, '/opt/skills', TENANCY),
    ).toHaveLength(1);
    expect(
      statusOf(() => validateExtraMounts([ok('/mnt/skills/custom')], BASE, '/opt/skills', TENANCY)),
    ).toBe(400);
  });

  it('PVC sub-paths refuse empty, absolute and ".." paths', () => {
    for (const bad of ['', '.', '/abs', 'a/../..', '..'])
      expect(statusOf(() => safeSubPath(bad))).toBe(400);
    expect(safeSubPath('sbx/users/u/x/')).toBe('sbx/users/u/x');
  });
});
