/**
 * Which stack a server or client runs on: the option, else `SBILAB_STACK`,
 * else `native`. One rule for servers, clients, `lab serve`, `lab request`
 * and `lab bench`.
 */
import { parseStack, type StackName } from "./types.ts";

/** Environment variable naming the default stack. */
export const STACK_ENV = "SBILAB_STACK";

/** Resolves the stack; throws `RangeError` on an unknown name in the option or environment. */
export function resolveStack(stack?: StackName | string): StackName {
  return parseStack(stack ?? Deno.env.get(STACK_ENV) ?? "native");
}
