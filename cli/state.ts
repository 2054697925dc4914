/** Where the CLI keeps state between runs (the dev PKI). */

/** Default state folder: `$XDG_STATE_HOME/sbilab` or `~/.local/state/sbilab`. */
export function defaultStateDir(): string {
  const xdg = Deno.env.get("XDG_STATE_HOME");
  if (xdg) return `${xdg}/sbilab`;
  const home = Deno.env.get("HOME") ?? "/tmp";
  return `${home}/.local/state/sbilab`;
}
