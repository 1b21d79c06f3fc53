// One API call as the stand-in's routing hands it to the resource that serves it: what is asked
// (verb, namespace, name, body, the label selector) and how to answer, recorded.

export type KubeVerb = 'create' | 'read' | 'list' | 'delete';
export type KubeResource = 'namespaces' | 'pods' | 'services' | 'sandboxes' | 'networkpolicies';

export interface KubeCall {
  verb: KubeVerb;
  namespace: string | undefined;
  /** The object named by the path; undefined for a create or a list. */
  name: string | undefined;
  body: Record<string, unknown>;
  labelSelector: string | null;
  /** Records the call with `code` and sends `payload`. */
  reply(code: number, payload: unknown): void;
}

/** The name in a body's metadata (`''` when it has none). */
export function bodyName(body: Record<string, unknown>): string {
  return (body.metadata as { name?: string } | undefined)?.name ?? '';
}
