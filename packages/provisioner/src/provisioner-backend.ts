import type { CreateSandboxRequest } from './create-request.js';
import type { DeleteResponse, GarbageReport, SandboxResponse } from './sandbox-pods.js';

/**
 * How the provisioner makes sandboxes: `SandboxPods` (a Pod and a Service each) or
 * `AgentSandboxes` (a kubernetes-sigs/agent-sandbox `Sandbox` each). The HTTP API is the same
 * for both.
 */
export interface ProvisionerBackend {
  readonly namespace: string;
  ensureNamespace(): Promise<void>;
  create(request: CreateSandboxRequest): Promise<SandboxResponse>;
  /** @throws ProvisionerHttpError 404 when there is no such sandbox with an access URL */
  get(id: string): Promise<SandboxResponse>;
  delete(id: string): Promise<DeleteResponse>;
  list(): Promise<{ sandboxes: SandboxResponse[]; count: number }>;
  collectGarbage(): Promise<GarbageReport>;
}
