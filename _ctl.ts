import { runLinkCase } from "./transports/h3/interop/link_cases.ts";
import { createDevPki } from "./transports/pki.ts";
const pki = await createDevPki();
const [name, server, client] = Deno.args;
console.log(await runLinkCase(name, { server: server as "ours", client: client as "ours", pki }));
