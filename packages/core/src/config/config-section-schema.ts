import path from 'node:path';
import type { z } from 'zod';
import type { OpenConfigBlock, SandboxConfig } from './config.js';
import {
  DEFAULT_CHECKPOINT_MAX_BYTES,
  DEFAULT_CHECKPOINT_MAX_ENTRIES,
  MAX_CHECKPOINT_BYTES,
  MAX_CHECKPOINT_ENTRIES,
  MAX_SNAPSHOT_TTL_SECONDS,
  OVERFLOW_POLICIES,
  OWNERSHIP_TYPES,
} from './config.js';
import { DEFAULT_SKILLS_ROOT } from '../paths/virtual-paths.js';
import {
  CONTAINER_NAME_RE,
  DEFAULT_BASE_DIR,
  DEFAULT_OWNERSHIP_KEY_PREFIX,
  ENV_NAME_RE,
  MAX_TIMER_SECONDS,
  containerPathProblem,
  hostDataDirProblem,
  skillsRootProblem,
  urlProblem,
} from './config-schema.js';
import { ENV_POLICY_MODES } from './env-policy.js';
import {
  DEFAULT_SPEC_MAXIMA,
  MIN_SPEC_CPUS,
  SPEC_CEILINGS,
} from '../contract/sandbox-spec-bounds.js';
import {
  MAX_NETWORK_CREDENTIALS,
  MAX_NETWORK_RULES,
  NETWORK_MODES,
  domainNameProblem,
  parseHostRule,
  parseNetworkPolicy,
} from '../contract/network-policy.js';
import { lazily, zod } from './zod-runtime.js';
import type { Zod } from './zod-runtime.js';
import {
  DEFAULT_PROVIDER_SPECIFIER,
  providerSpecifierProblem,
} from '../modules/provider-specifier.js';

/**
 * The zod schema of one `sandbox:` section in the snake_case layout users write. Objects are strict
 * (an unknown key is an error, so a typo never silently falls back to a default) except the open
 * blocks that other packages validate. The final transform produces the camelCase `SandboxConfig`.
 *
 * This schema sees the section after `parseSandboxConfig` normalised it (unwrapped from `sandbox:`,
 * nulls removed, `$NAME` values resolved); use `parseSandboxConfig` for user input. It is built on
 * first use (`zod()`), not when `@sbx/core` is imported.
 *
 * Kept whole as one concept: the section's keys. Each key is declared once below, with the bounds
 * and the description the generated config reference prints, and mapped once in `toConfig`; a key
 * and its camelCase twin are read and changed together. The shared rules the keys use (names,
 * paths, URLs) are in `config-schema.ts`, the types they produce in `config.ts`.
 */
function buildSectionInputSchema(z: Zod) {
  const timerSeconds = () => z.number().lte(MAX_TIMER_SECONDS);

  /** Attaches a check whose message explains the problem (zod's refine takes a static message). */
  function checked<T extends z.ZodType<string>>(
    schema: T,
    problem: (v: string) => string | undefined,
  ) {
    return schema.superRefine((value, ctx) => {
      const message = problem(value);
      if (message) ctx.addIssue({ code: 'custom', message, input: value });
    });
  }

  /** The message of `parseHostRule` for a bad rule (it names the key path itself). */
  const hostRuleProblem = (v: string): string | undefined => {
    try {
      parseHostRule(v, 'rule');
      return undefined;
    } catch (error) {
      return (error as Error).message.replace(/^rule: /, '');
    }
  };
  const hostRules = (description: string) =>
    z
      .array(checked(z.string(), hostRuleProblem))
      .max(MAX_NETWORK_RULES)
      .default([])
      .describe(description);

  const networkSchema = z
    .strictObject({
      mode: z
        .enum(NETWORK_MODES)
        .default('open')
        .describe(
          'Egress of every sandbox: "none" (no network), "allowlist" (only the hosts of allow, minus deny) or "open" (every host but deny). A provider that cannot enforce it refuses every acquire rather than ignore it.',
        ),
      allow: hostRules(
        'With mode allowlist: the hosts a sandbox may reach, as "host", "*.domain" (every name below domain) or "host:443,8443" (those ports only).',
      ),
      deny: hostRules('Hosts never reached, whatever allow says; same forms as allow.'),
      credentials: z
        .array(
          z.strictObject({
            host: checked(z.string(), (v) => {
              const r = domainNameProblem(v, false);
              return 'problem' in r ? `${JSON.stringify(v)} ${r.problem}` : undefined;
            }).describe('The host whose requests carry the secret.'),
            header: z
              .string()
              .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/)
              .describe('The header that carries it, e.g. Authorization.'),
            secret_env: z
              .string()
              .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/)
              .optional()
              .describe("The gateway's environment variable holding the secret."),
            secret: z
              .string()
              .regex(/^[A-Za-z_][A-Za-z0-9_.:/-]{0,127}$/)
              .optional()
              .describe(
                'A secret name asked of the secret provider the host application passes in.',
              ),
          }),
        )
        .max(MAX_NETWORK_CREDENTIALS)
        .default([])
        .superRefine((list, ctx) => {
          list.forEach((c, i) => {
            if ((c.secret_env === undefined) === (c.secret === undefined)) {
              ctx.addIssue({
                code: 'custom',
                message: 'give exactly one of secret_env and secret',
                path: [i],
                input: c,
              });
            }
          });
        })
        .describe(
          'Credentials the agent can use but never sees: for requests to host, the header carrying the secret.',
        ),
    })
    .superRefine((n, ctx) => {
      if (n.mode !== 'allowlist' && n.allow.length > 0) {
        ctx.addIssue({
          code: 'custom',
          message: 'allow is only meaningful with mode allowlist',
          path: ['allow'],
          input: n.allow,
        });
      }
    })
    .default({ mode: 'open', allow: [], deny: [], credentials: [] })
    .describe(
      'What sandboxes may reach over the network; a per-acquire spec.network may only narrow it. See docs/egress.md.',
    );

  const openBlock = (description: string) =>
    z.record(z.string(), z.unknown()).optional().describe(description);

  const ownershipSchema = z
    .strictObject({
      type: z
        .enum(OWNERSHIP_TYPES)
        .default('memory')
        .describe(
          'Lease store backend: "memory" (one process only; peers are invisible) or "redis" (shared by every gateway instance; required when several instances share a container backend).',
        ),
      redis_url: checked(z.string(), (v) => urlProblem(v, ['redis:', 'rediss:']))
        .optional()
        .describe(
          'Redis URL for type redis. When absent: env SBX_OWNERSHIP_REDIS_URL, DEER_FLOW_SANDBOX_OWNERSHIP_REDIS_URL, DEER_FLOW_STREAM_BRIDGE_REDIS_URL, REDIS_URL, then redis://localhost:6379/0.',
        ),
      renewal_interval_seconds: timerSeconds()
        .gt(0)
        .default(30)
        .describe(
          'Seconds between lease renewals by the owning instance. Independent of idle_timeout: renewal runs even when idle reaping is off.',
        ),
      ttl_multiplier: z
        .number()
        .gte(2)
        .default(4)
        .describe(
          'Lease TTL = renewal_interval_seconds x ttl_multiplier. At least 2 so one missed renewal cannot expire a live owner.',
        ),
      key_prefix: z
        .string()
        .min(1)
        .default(DEFAULT_OWNERSHIP_KEY_PREFIX)
        .describe(
          'Redis key prefix for leases (redis only). Set "deerflow:sandbox:owner" to share lease keys with a reference deployment.',
        ),
    })
    .describe(
      'Cross-instance container ownership. Omitted: memory, unless the environment implies redis.',
    );

  const mountSchema = z
    .strictObject({
      host_path: checked(z.string().min(1), (v) =>
        path.posix.isAbsolute(v) || path.win32.isAbsolute(v)
          ? path.posix.isAbsolute(v)
            ? hostDataDirProblem(v)
            : undefined
          : 'must be an absolute host path (relative paths are ambiguous for container runtimes)',
      ).describe('Host directory to mount (as the process that creates the sandbox sees it).'),
      container_path: checked(z.string(), containerPathProblem).describe(
        'Absolute path of the mount inside the sandbox.',
      ),
      read_only: z.boolean().default(false).describe('Mount read-only.'),
    })
    .describe('One extra host directory visible inside the sandbox.');

  const toolLimitSchema = (name: string, fallback: number, what: string) =>
    z
      .strictObject({
        max_results: z
          .number()
          .int()
          .gt(0)
          .default(fallback)
          .describe(`Upper bound on ${what} returned by one call.`),
      })
      .default({ max_results: fallback })
      .describe(`Limits of the ${name} tool.`);

  const sectionShape = {
    use: checked(z.string(), providerSpecifierProblem)
      .default(DEFAULT_PROVIDER_SPECIFIER)
      .describe(
        'Provider package, optionally with #ExportName (e.g. "@sbx/aio#AioSandboxProvider"). Reference class paths such as "deerflow.community.aio_sandbox:AioSandboxProvider" are translated.',
      ),
    allow_host_bash: z
      .boolean()
      .default(false)
      .describe(
        'Let the bash tool run commands on the host with the local provider. Not an isolation boundary: trusted single-user setups only.',
      ),
    image: z
      .string()
      .min(1)
      .optional()
      .describe('Sandbox image (container or micro-VM image); provider default when absent.'),
    port: z
      .number()
      .int()
      .min(1)
      .max(65535)
      .optional()
      .describe('Base host port for sandbox containers (AIO; provider default 8080).'),
    replicas: z
      .number()
      .int()
      .gt(0)
      .optional()
      .describe(
        'Capacity: active + warm sandboxes (provider default 3). Deployment-wide for E2B with redis ownership.',
      ),
    overflow_policy: z
      .enum(OVERFLOW_POLICIES)
      .default('wait')
      .describe(
        'What an acquire does at capacity: wait up to acquire_timeout, reject, or burst up to burst_limit extra.',
      ),
    acquire_timeout: timerSeconds()
      .int()
      .gt(0)
      .default(30)
      .describe('Seconds the wait policy waits for capacity.'),
    burst_limit: z
      .number()
      .int()
      .gte(0)
      .default(0)
      .describe('Extra capacity slots for the burst policy.'),
    container_prefix: checked(z.string(), (v) =>
      CONTAINER_NAME_RE.test(v)
        ? undefined
        : 'must be a valid container name prefix ([A-Za-z0-9][A-Za-z0-9_.-]*)',
    )
      .optional()
      .describe('Container name prefix (AIO; provider default applies when absent).'),
    idle_timeout: timerSeconds()
      .int()
      .gte(0)
      .optional()
      .describe(
        'Seconds before an idle released sandbox is stopped; 0 keeps warm sandboxes until shutdown (provider default, usually 600).',
      ),
    health_check_skip_seconds: z
      .number()
      .gte(0)
      .optional()
      .describe(
        'Skip the reuse health check for sandboxes released less than this many seconds ago (BoxLite).',
      ),
    ownership: ownershipSchema.optional(),
    warm_pool: z
      .strictObject({
        idle_check_interval_seconds: timerSeconds()
          .gt(0)
          .default(60)
          .describe('Seconds between idle checks of released (warm) sandboxes.'),
      })
      .default({ idle_check_interval_seconds: 60 })
      .describe('Warm-pool housekeeping shared by providers that park released sandboxes.'),
    checkpoint: z
      .strictObject({
        max_bytes: z
          .number()
          .int()
          .gt(0)
          .lte(MAX_CHECKPOINT_BYTES)
          .default(DEFAULT_CHECKPOINT_MAX_BYTES)
          .describe(
            'Largest workspace checkpoint (snapshot, export, import): the sum of its file sizes, and the largest file.',
          ),
        max_entries: z
          .number()
          .int()
          .gt(0)
          .lte(MAX_CHECKPOINT_ENTRIES)
          .default(DEFAULT_CHECKPOINT_MAX_ENTRIES)
          .describe('Most files and directories a workspace checkpoint may hold.'),
        snapshot_ttl_seconds: z
          .number()
          .int()
          .gte(0)
          .lte(MAX_SNAPSHOT_TTL_SECONDS)
          .default(0)
          .describe(
            'Seconds a snapshot restores for; after that it is refused (SNAPSHOT_EXPIRED) and swept. 0: snapshots do not expire.',
          ),
      })
      .default({
        max_bytes: DEFAULT_CHECKPOINT_MAX_BYTES,
        max_entries: DEFAULT_CHECKPOINT_MAX_ENTRIES,
        snapshot_ttl_seconds: 0,
      })
      .describe('Bounds of workspace checkpoints and the life of snapshots.'),
    spec: z
      .strictObject({
        images: z
          .array(z.string().min(1))
          .default([])
          .describe('Images (or VM templates) an acquire may ask for in its spec.'),
        max_memory_mb: z
          .number()
          .int()
          .gt(0)
          .lte(SPEC_CEILINGS.memoryMb)
          .optional()
          .describe(
            `Largest spec.resources.memoryMb (absent: the provider's own limit, else ${DEFAULT_SPEC_MAXIMA.memoryMb}, the hardened default).`,
          ),
        max_cpus: z
          .number()
          .gte(MIN_SPEC_CPUS)
          .lte(SPEC_CEILINGS.cpus)
          .optional()
          .describe(
            `Largest spec.resources.cpus (absent: the provider's own limit, else ${DEFAULT_SPEC_MAXIMA.cpus}, the hardened default).`,
          ),
        max_pids: z
          .number()
          .int()
          .gt(0)
          .lte(SPEC_CEILINGS.pids)
          .optional()
          .describe(
            `Largest spec.resources.pids (absent: the provider's own limit, else ${DEFAULT_SPEC_MAXIMA.pids}, the hardened default).`,
          ),
        max_disk_gb: z
          .number()
          .int()
          .gt(0)
          .lte(SPEC_CEILINGS.diskGb)
          .optional()
          .describe(
            `Largest spec.resources.diskGb (absent: the provider's own limit, else ${DEFAULT_SPEC_MAXIMA.diskGb}).`,
          ),
        max_timeout_seconds: timerSeconds()
          .gt(0)
          .optional()
          .describe(
            `Largest spec.timeoutSeconds (absent: ${DEFAULT_SPEC_MAXIMA.timeoutSeconds}, the default idle timeout of E2B).`,
          ),
      })
      .default({ images: [] })
      .describe(
        'Bounds of the per-acquire sandbox spec (image, resources, timeout, labels) a host application may pass; an absent max_* is the hardened default, so a spec may only narrow the default sandbox.',
      ),
    network: networkSchema,
    mounts: z
      .array(mountSchema)
      .default([])
      .describe('Extra host directories mounted into every sandbox.'),
    thread_data_mounts: z
      .boolean()
      .optional()
      .describe(
        'Override whether thread user-data directories are already visible to the sandbox through shared mounts (absent: provider decides).',
      ),
    environment: z
      .record(
        checked(z.string(), (k) =>
          ENV_NAME_RE.test(k) ? undefined : 'is not a valid environment variable name',
        ),
        z.union([z.string(), z.number(), z.boolean()]),
      )
      .default({})
      .describe(
        'Environment of every sandbox. A value "$NAME" is read from the host environment (unset: ""); numbers and booleans are stringified.',
      ),
    bash_output_max_chars: z
      .number()
      .int()
      .gte(0)
      .default(20000)
      .describe('bash tool output limit in characters (middle truncation); 0 disables.'),
    read_file_output_max_chars: z
      .number()
      .int()
      .gte(0)
      .default(50000)
      .describe('read_file tool output limit in characters (head truncation); 0 disables.'),
    ls_output_max_chars: z
      .number()
      .int()
      .gte(0)
      .default(20000)
      .describe('ls tool output limit in characters (head truncation); 0 disables.'),
    bash_command_timeout: timerSeconds()
      .int()
      .gt(0)
      .default(600)
      .describe(
        'Wall-clock seconds one host bash command may run before its process group is killed.',
      ),
    env_policy: z
      .enum(ENV_POLICY_MODES)
      .default('allowlist')
      .describe(
        'How host commands inherit the gateway environment: "allowlist" (only PATH, HOME, LANG, LC_*, TERM, TZ, TMPDIR, USER, SHELL, VIRTUAL_ENV and the like, plus env_allow) or "scrub" (the reference: everything but secret-looking names and credential-bearing values).',
      ),
    env_allow: z
      .array(
        checked(z.string(), (k) =>
          ENV_NAME_RE.test(k) ? undefined : 'is not a valid environment variable name',
        ),
      )
      .default([])
      .describe(
        'Extra variable names the allowlist policy lets commands inherit (secret-looking names are still dropped).',
      ),
    search_timeout_seconds: timerSeconds()
      .gt(0)
      .default(10)
      .describe(
        'Wall-clock seconds one grep or glob may run; past it the search stops and reports what it found so far.',
      ),
    provisioner_url: checked(z.string(), (v) => urlProblem(v, ['http:', 'https:']))
      .optional()
      .describe('Remote provisioner base URL (AIO); absent means local containers.'),
    provisioner_api_key: z
      .string()
      .min(1)
      .optional()
      .describe('Sent to the provisioner as X-API-Key.'),
    skills: z
      .strictObject({
        container_path: checked(z.string(), skillsRootProblem)
          .default(DEFAULT_SKILLS_ROOT)
          .describe(
            'Skills root inside the sandbox. A non-default root is folded into sandbox identity.',
          ),
        path: z
          .string()
          .min(1)
          .optional()
          .describe('Host directory of the raw skills (host application default when absent).'),
      })
      .default({ container_path: DEFAULT_SKILLS_ROOT })
      .describe('Where skills live.'),
    read_before_write: z
      .strictObject({
        enabled: z
          .boolean()
          .default(true)
          .describe(
            'Refuse overwriting or editing an existing file the agent has not read in its current version.',
          ),
      })
      .default({ enabled: true })
      .describe('Read-before-write gate of the file tools.'),
    base_dir: checked(z.string().min(1), hostDataDirProblem)
      .optional()
      .describe(
        'Data directory for thread files and skill projections. Absent: env SBX_HOME, else ./.sbx (relative to the working directory).',
      ),
    tools: z
      .strictObject({
        glob: toolLimitSchema('glob', 200, 'paths'),
        grep: toolLimitSchema('grep', 100, 'matches'),
        process_tools: z
          .boolean()
          .default(false)
          .describe(
            "Offer bash's yield mode (yield_time_ms) and the process tools (process_output, process_write, process_kill, process_list). Off: bash runs every command to completion, as the reference does.",
          ),
      })
      .default({ glob: { max_results: 200 }, grep: { max_results: 100 }, process_tools: false })
      .describe('Limits of the search tools, and the opt-in process tools.'),
    authorization: openBlock('Authorization gate settings, validated by @sbx/authz.'),
    local: openBlock('Options of @sbx/local, validated by that package.'),
    aio: openBlock('Options of @sbx/aio, validated by that package.'),
    e2b: openBlock('Options of @sbx/e2b, validated by that package.'),
    boxlite: openBlock('Options of @sbx/boxlite, validated by that package.'),
    tenki: openBlock('Options of @sbx/tenki, validated by that package.'),
    opensandbox: openBlock('Options of @sbx/opensandbox, validated by that package.'),
    provisioner: openBlock(
      'Settings of the Kubernetes provisioner service, validated by @sbx/provisioner.',
    ),
    provider_options: openBlock('Options of a third-party provider package named by use.'),
  };

  return z.strictObject(sectionShape);
}

type SectionInputSchema = ReturnType<typeof buildSectionInputSchema>;

/** The strict snake_case section before the camelCase transform (what `listSandboxConfigKeys` reads). */
export const sandboxSectionInputSchema: () => SectionInputSchema = lazily(() =>
  buildSectionInputSchema(zod()),
);

export type SandboxConfigInput = z.input<SectionInputSchema>;
type Section = z.output<SectionInputSchema>;

export interface SandboxSchemaContext {
  /** Consulted for `SBX_HOME` when `base_dir` is absent. Default: `process.env` at parse time. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Base for a relative `base_dir`. Default: `process.cwd()` at parse time. */
  cwd?: string;
}

const open = (block: Record<string, unknown> | undefined): OpenConfigBlock | undefined => block;

function toConfig(s: Section, ctx: SandboxSchemaContext): SandboxConfig {
  const env = ctx.env ?? process.env;
  const home = s.base_dir ?? (env.SBX_HOME || undefined) ?? DEFAULT_BASE_DIR;
  return {
    use: s.use,
    allowHostBash: s.allow_host_bash,
    image: s.image,
    port: s.port,
    replicas: s.replicas,
    overflowPolicy: s.overflow_policy,
    acquireTimeout: s.acquire_timeout,
    burstLimit: s.burst_limit,
    containerPrefix: s.container_prefix,
    idleTimeout: s.idle_timeout,
    healthCheckSkipSeconds: s.health_check_skip_seconds,
    ownership: s.ownership && {
      type: s.ownership.type,
      redisUrl: s.ownership.redis_url,
      renewalIntervalSeconds: s.ownership.renewal_interval_seconds,
      ttlMultiplier: s.ownership.ttl_multiplier,
      keyPrefix: s.ownership.key_prefix,
    },
    warmPool: { idleCheckIntervalSeconds: s.warm_pool.idle_check_interval_seconds },
    checkpoint: {
      maxTotalBytes: s.checkpoint.max_bytes,
      maxEntries: s.checkpoint.max_entries,
      snapshotTtlSeconds: s.checkpoint.snapshot_ttl_seconds,
    },
    specPolicy: {
      images: s.spec.images,
      maxMemoryMb: s.spec.max_memory_mb,
      maxCpus: s.spec.max_cpus,
      maxPids: s.spec.max_pids,
      maxDiskGb: s.spec.max_disk_gb,
      maxTimeoutSeconds: s.spec.max_timeout_seconds,
      network: parseNetworkPolicy(
        {
          mode: s.network.mode,
          allow: s.network.allow,
          deny: s.network.deny,
          credentials: s.network.credentials.map((c) => ({
            host: c.host,
            header: c.header,
            source:
              c.secret_env !== undefined
                ? { kind: 'env', name: c.secret_env }
                : { kind: 'provider', name: c.secret },
          })),
        },
        'sandbox.network',
      ),
    },
    mounts: s.mounts.map((m) => ({
      hostPath: m.host_path,
      containerPath: m.container_path.replace(/\/+$/, ''),
      readOnly: m.read_only,
    })),
    threadDataMounts: s.thread_data_mounts,
    environment: Object.fromEntries(Object.entries(s.environment).map(([k, v]) => [k, String(v)])),
    bashOutputMaxChars: s.bash_output_max_chars,
    readFileOutputMaxChars: s.read_file_output_max_chars,
    lsOutputMaxChars: s.ls_output_max_chars,
    bashCommandTimeout: s.bash_command_timeout,
    searchTimeoutSeconds: s.search_timeout_seconds,
    envPolicy: s.env_policy,
    envAllow: s.env_allow,
    provisionerUrl: s.provisioner_url,
    provisionerApiKey: s.provisioner_api_key,
    skills: { containerPath: s.skills.container_path.replace(/\/+$/, ''), path: s.skills.path },
    readBeforeWrite: { enabled: s.read_before_write.enabled },
    baseDir: path.resolve(ctx.cwd ?? process.cwd(), home),
    tools: {
      glob: { maxResults: s.tools.glob.max_results },
      grep: { maxResults: s.tools.grep.max_results },
      processTools: s.tools.process_tools,
    },
    authorization: open(s.authorization),
    local: open(s.local),
    aio: open(s.aio),
    e2b: open(s.e2b),
    boxlite: open(s.boxlite),
    tenki: open(s.tenki),
    opensandbox: open(s.opensandbox),
    provisioner: open(s.provisioner),
    providerOptions: open(s.provider_options),
  };
}

/** A section schema whose transform reads `env` / `cwd` from `ctx` instead of the process. */
export function createSandboxConfigSchema(
  ctx: SandboxSchemaContext = {},
): z.ZodType<SandboxConfig, SandboxConfigInput> {
  return sandboxSectionInputSchema().transform((s) => toConfig(s, ctx));
}

/** Validates one normalised `sandbox:` section (snake_case) into a `SandboxConfig` (camelCase). */
export const sandboxConfigSchema: () => z.ZodType<SandboxConfig, SandboxConfigInput> = lazily(() =>
  createSandboxConfigSchema(),
);
