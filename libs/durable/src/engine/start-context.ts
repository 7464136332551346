import { encode } from '../codec/codec.js';
import type { ResolvedEngineOptions } from '../config/options.js';
import { MAX_CONTEXT_BYTES } from '../config/limits.js';
import { errorText } from '../errors/error-text.js';
import { InvalidArgumentError } from '../errors/index.js';
import type { StartOptions } from './start-options.js';

/**
 * The context a run starting now keeps (engine option `context`), encoded: the start option
 * `context` if given, else what `capture()` returns in the caller's async context; null for none.
 * A start without one when `required` is set is refused, as is one whose context cannot be stored.
 */
export function startContext(options: ResolvedEngineOptions, workflowName: string, opts: StartOptions): string | null {
  const o = options.context;
  let value: unknown = opts.context;
  if (value === undefined && o?.capture) {
    try {
      value = o.capture();
    } catch (err) {
      throw new InvalidArgumentError(`the context option's capture() threw while starting "${workflowName}": ${errorText(err)}`, 'context');
    }
    if (value instanceof Promise) {
      value.catch(() => {});
      throw new InvalidArgumentError(
        `the context option's capture() must return the context, not a promise (starting "${workflowName}"): read it synchronously from your request context`,
        'context',
      );
    }
  }
  if (value === undefined || value === null) {
    if (o?.required) {
      throw new InvalidArgumentError(
        `workflow "${workflowName}" cannot start without a context (engine option context.required): start it where capture() finds one, e.g. inside a request, or pass the start option { context }`,
        'context',
      );
    }
    return null;
  }
  return encode(value, { where: `the context of a run of "${workflowName}"`, maxBytes: MAX_CONTEXT_BYTES });
}
