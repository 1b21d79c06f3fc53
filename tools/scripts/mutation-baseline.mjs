// What an area's baseline run (its tests, unmutated) decides for the mutants after it: whether
// its result can be trusted at all, and how long one mutant's run may take.

/** A mutant's run may take this many times the baseline before it counts as hanging. */
export const DEFAULT_TIMEOUT_FACTOR = 3;
/** ... but never less than this: a small baseline on a loaded machine is no measure of a hang. */
export const MIN_MUTANT_TIMEOUT_MS = 30_000;

/**
 * The time limit of one mutant's run: `factor` times the baseline's duration (which ran every
 * test file of the area, a superset of any mutant's), at least MIN_MUTANT_TIMEOUT_MS, at most
 * `capMs` (the run's --timeout). A mutant past it is killed and counted as caught by timeout,
 * instead of costing the whole --timeout.
 */
export function mutantTimeLimitMs(baselineMs, { factor = DEFAULT_TIMEOUT_FACTOR, capMs }) {
  if (!(baselineMs >= 0) || !(factor > 0) || !(capMs > 0)) {
    throw new RangeError('mutantTimeLimitMs: baselineMs >= 0, factor > 0 and capMs > 0');
  }
  return Math.min(capMs, Math.max(MIN_MUTANT_TIMEOUT_MS, Math.ceil(baselineMs * factor)));
}

const SKIPPED = new Set(['skipped', 'pending', 'todo', 'disabled']);

/**
 * The tests a vitest JSON report (`--reporter=json`) shows as not run: `file › full name` each. A
 * report that is not one (no testResults array) is an error, not "nothing skipped".
 */
export function skippedTests(report) {
  if (typeof report !== 'object' || report === null || !Array.isArray(report.testResults)) {
    throw new Error('not a vitest JSON report (no testResults)');
  }
  const out = [];
  for (const file of report.testResults) {
    for (const test of file.assertionResults ?? []) {
      if (SKIPPED.has(test.status)) out.push(`${file.name} › ${test.fullName ?? test.title}`);
    }
  }
  return out;
}

const START = {
  redis: 'source tools/services/start-redis.sh',
  docker: 'source tools/services/start-docker.sh (images: tools/images/build-images.sh)',
};

/**
 * Why a baseline that passed still cannot be trusted, or null. A skipped test catches no mutant,
 * so its mutants would survive for a reason that has nothing to do with the code: typically a
 * Redis or Docker list run where the service is missing and its tests skip themselves. Skips are
 * accepted only from an area that declares it needs no services (`"services": []`).
 */
export function baselineProblem({ area, services, skipped, limit = 10 }) {
  if (skipped.length === 0) return null;
  if (Array.isArray(services) && services.length === 0) return null;
  const shown = skipped.slice(0, limit).map((s) => `  skipped: ${s}`);
  if (skipped.length > limit) shown.push(`  ... and ${skipped.length - limit} more`);
  const how =
    services === null || services === undefined
      ? 'If these skips do not depend on a service, declare "services": [] in the list.'
      : `This area needs ${services.join(', ')}: ${services
          .map((s) => START[s] ?? `start ${s}`)
          .join('; ')}, then run again (SBX_REQUIRE_SERVICES=1 is set for it).`;
  return [
    `[${area}] the baseline skipped ${skipped.length} test(s); its mutants would survive unrun, so the area is not scored.`,
    ...shown,
    how,
  ].join('\n');
}
