import type { SandboxOwner } from './sandbox-owner.js';
import type { ThreadNamespace } from './thread-namespace.js';

/** What a `LocalSandbox` needs to run its commands confined. */
export interface SandboxConfinement {
  /** The thread's namespaces, shared by every sandbox object of the thread. */
  readonly namespace: ThreadNamespace;
  /** Working directory of a command that names none (the workspace). */
  readonly initCwd: string;
  /** Host user commands run as, when it is not the gateway's own (a root gateway). */
  readonly owner: SandboxOwner | undefined;
  /**
   * Canonical host roots of the thread's own writable directories: what the file tools create
   * there is handed to `owner`. Custom mounts are not among them (their ownership is the
   * operator's).
   */
  readonly ownedRoots: readonly string[];
}
