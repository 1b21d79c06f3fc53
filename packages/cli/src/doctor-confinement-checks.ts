import type { ConfigIssue } from '@sbx/core';
import {
  probeConfinementHost,
  resolveLimitsBlock,
  type ConfinementLimits,
  type ConfinementReport,
} from '@sbx/local';
import { describe } from './doctor-probe.js';
import type { Check, ProbeContext } from './doctor-probe.js';

/** The group of the confinement rows in `sbx doctor`. */
export const CONFINEMENT_GROUP = 'confinement';

/** What the doctor asks the probes about: the configured limits and sandbox user. */
export interface ConfinementProbeRequest {
  readonly limits: ConfinementLimits;
  readonly owner: { readonly uid?: number; readonly gid?: number };
}

/** How the host's confinement is probed (tests describe a host instead). */
export type ConfinementProber = (request: ConfinementProbeRequest) => Promise<ConfinementReport>;

export const defaultConfinementProber: ConfinementProber = ({ limits, owner }) =>
  probeConfinementHost({ limits, owner });

function configuredId(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/** Rows that decide whether commands can run confined at all (the rest are about limits). */
const CONFINING = new Set(['confinement.bwrap', 'confinement.userns', 'confinement.seccomp']);

/**
 * The confinement rows: bubblewrap, user namespaces, seccomp, cgroups, and the configured limits
 * with what enforces each here. Required only where the configuration demands confinement
 * (`sandbox.local.isolation: bwrap`); under `auto` a failure means bash stays off, which the rows
 * explain, not a broken setup.
 */
export async function confinementChecks(
  ctx: ProbeContext,
  prober: ConfinementProber,
): Promise<{ check: Check; required: boolean }[]> {
  const block = ctx.config.local as Readonly<Record<string, unknown>> | undefined;
  const demanded = block?.isolation === 'bwrap';
  if (ctx.platform !== 'linux') {
    return [
      {
        check: {
          id: 'confinement.bwrap',
          title: 'confined commands',
          status: demanded ? 'fail' : 'skip',
          detail: `confined commands need Linux (this is ${ctx.platform}); a macOS Seatbelt backend is designed, not built`,
          fix: demanded
            ? 'set sandbox.local.isolation to auto or none, or run on Linux'
            : undefined,
        },
        required: demanded,
      },
    ];
  }
  // The configuration check reports bad limits; the rows show the values that would apply.
  const limits = resolveLimitsBlock(block?.limits, [] as ConfigIssue[]);
  ctx.onProgress('probing confinement (bubblewrap, user namespaces, seccomp, cgroups)');
  let report: ConfinementReport;
  try {
    const uid = configuredId(block?.sandbox_uid);
    const gid = configuredId(block?.sandbox_gid);
    report = await prober({
      limits,
      owner: { ...(uid === undefined ? {} : { uid }), ...(gid === undefined ? {} : { gid }) },
    });
  } catch (err) {
    return [
      {
        check: {
          id: 'confinement.bwrap',
          title: 'confinement probes',
          status: 'fail',
          detail: `the probes failed: ${describe(err)}`,
          fix: 'run bwrap --unshare-user --ro-bind / / true by hand to see what the host says',
        },
        required: demanded,
      },
    ];
  }
  return report.checks.map((c) => ({
    check: { id: c.id, title: c.title, status: c.status, detail: c.detail, fix: c.fix },
    required: demanded && CONFINING.has(c.id),
  }));
}
