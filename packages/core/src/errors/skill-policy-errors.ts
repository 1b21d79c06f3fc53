import { SbxError, type SbxErrorOptions } from './errors.js';

/**
 * A sandbox would show a run the wrong skills view: the shared categories to a run under an
 * explicit skill policy, or the thread's policy view replaced by the shared one for a run that does
 * not say which it is. Raised instead of handing the sandbox out (fail closed).
 */
export class SkillPolicyViewError extends SbxError {
  static override readonly CODE = 'SKILL_POLICY_VIEW';
  readonly sandboxId: string;
  constructor(sandboxId: string, message: string, options: SbxErrorOptions = {}) {
    super(message, { ...options, details: { sandbox_id: sandboxId } });
    this.sandboxId = sandboxId;
  }
}
