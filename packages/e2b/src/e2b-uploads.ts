import { stat } from 'node:fs/promises';
import { SandboxNotFoundError, resolveEffectiveUserId } from '@sbx/core';
import type { SyncAgentSkillsOptions } from '@sbx/core';
import { syncSkillsInto } from './skill-sync.js';
import { SKILL_CATEGORIES, sharedSkillsViewPath } from '@sbx/core/internal';
import type { E2BRemoteSandbox } from './e2b-client.js';
import { errorMessage } from './e2b-errors.js';
import { UploadPass, uploadTree } from './tree-upload.js';
import { threadKeyText } from './e2b-thread-key.js';
import type { PlannedTree, ThreadKey } from './e2b-thread-key.js';
import type { E2BProviderContext } from './e2b-provider-context.js';

/** The one-shot uploads of a new VM: the shared skills projection and the configured mounts. */
export class E2BUploads {
  readonly #ctx: E2BProviderContext;

  constructor(ctx: E2BProviderContext) {
    this.#ctx = ctx;
  }

  /**
   * The one-shot uploads of a new VM: the shared skills projection (unrestricted sandboxes only),
   * then the configured mounts, all in one pass with one byte/file budget and deadline. The two
   * sources are independent: a projection that cannot be planned uploads nothing of itself but
   * never costs the operator's configured mounts, and one tree that fails does not stop the next.
   */
  async oneShotUploads(
    remote: E2BRemoteSandbox,
    key: ThreadKey | undefined,
    uploadShared: boolean,
  ): Promise<void> {
    const root = this.#ctx.settings.skillsRoot;
    const pass = new UploadPass(this.#ctx.clock, {}, this.#ctx.logger);
    const trees: PlannedTree[] = [];
    if (uploadShared) {
      for (const t of await this.#skillProjectionTrees(key)) trees.push(t);
    }
    for (const mount of this.#ctx.settings.mounts) {
      const dest = mount.containerPath.replace(/\/+$/, '');
      if (!dest.startsWith('/')) continue;
      if (dest === root || dest.startsWith(`${root}/`)) {
        this.#ctx.logger.warn('Skipping a mount inside the skills root (the projection owns it)', {
          containerPath: dest,
        });
        continue;
      }
      trees.push({ source: mount.hostPath, dest, readOnly: mount.readOnly, kind: 'mount' });
    }
    for (const tree of trees) {
      if (pass.stopped || !pass.inTime()) return;
      if (tree.kind === 'mount' && !(await stat(tree.source).catch(() => undefined))) continue;
      try {
        await uploadTree(remote, tree.source, tree.dest, pass, {
          readOnly: tree.readOnly,
          logger: this.#ctx.logger,
        });
      } catch (error) {
        this.#ctx.logger.warn(
          tree.kind === 'mount'
            ? 'Uploading a configured mount failed'
            : 'Uploading a skills projection category failed',
          { source: tree.source, destination: tree.dest, error: errorMessage(error) },
        );
      }
    }
  }

  /**
   * Plans the skills projection: one read-only tree per category view that exists. Planning is
   * all or nothing: a view that cannot be inspected (anything but "absent") means the projection
   * is unknown, and half of it would show the agent a skill set nobody chose.
   */
  async #skillProjectionTrees(key: ThreadKey | undefined): Promise<PlannedTree[]> {
    const userId = key?.userId ?? resolveEffectiveUserId(undefined);
    const trees: PlannedTree[] = [];
    try {
      for (const category of SKILL_CATEGORIES) {
        const host = sharedSkillsViewPath(this.#ctx.settings.baseDir, userId, category);
        let isDir: boolean;
        try {
          isDir = (await stat(host)).isDirectory();
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
          throw error;
        }
        if (isDir) {
          trees.push({
            source: host,
            dest: `${this.#ctx.settings.skillsRoot}/${category}`,
            readOnly: true,
            kind: 'skills',
          });
        }
      }
    } catch (error) {
      this.#ctx.logger.warn(
        'Planning the skills projection failed; uploading configured mounts only',
        {
          userId,
          error: errorMessage(error),
        },
      );
      return [];
    }
    return trees;
  }

  // ------------------------------------------------------------------------------------------
  // release

  /** Syncs a thread's skill projection into its active VM (under the thread's serializer lock). */
  async syncSkills(
    sandboxId: string,
    key: ThreadKey,
    options: SyncAgentSkillsOptions,
  ): Promise<void> {
    const entry = this.#ctx.book.active(sandboxId);
    if (
      entry?.key === undefined ||
      threadKeyText(entry.key) !== threadKeyText(key) ||
      entry.sandbox.client === undefined
    ) {
      throw new SandboxNotFoundError(
        `e2b sandbox ${sandboxId} is not active for this thread`,
        sandboxId,
      );
    }
    await syncSkillsInto(entry.sandbox.client, {
      root: this.#ctx.settings.skillsRoot,
      homeDir: this.#ctx.settings.homeDir,
      projection: options.projection,
      signature: options.signature,
      clock: this.#ctx.clock,
      logger: this.#ctx.logger,
    });
  }
}
