import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A worked session of the docs (a shell block) made runnable against a started `npm start`: its `API=` line takes the
 * address the start banner printed ("lastunit listening on ...: <url>"), as a reader does, and the demo keys replace the
 * placeholders. Throws when the block has no single `API=` line or the banner no address.
 * @example const script = sessionScript(block, server.output(), dataDir)
 */
export function sessionScript(block: string, serverOutput: string, dataDir: string): string {
  const banner = /lastunit listening on .*?(http:\/\/\S+\/graphql)/.exec(serverOutput)?.[1];
  if (!banner) throw new Error(`no "lastunit listening on" line in the start banner:\n${serverOutput}`);
  const apiLines = block.match(/^API=.*$/gm) ?? [];
  if (apiLines.length !== 1) throw new Error(`the session needs exactly one API= line, it has ${apiLines.length}`);
  const keys = JSON.parse(readFileSync(path.join(dataDir, 'demo-keys.json'), 'utf8')) as {
    role: string;
    key: string;
  }[];
  const key = (role: string) => keys.find((k) => k.role === role)!.key;
  return block
    .replace(/^API=.*$/m, `API=${banner}`)
    .replace('lu_admin_replace_me', key('admin'))
    .replace('lu_storefront_replace_me', key('storefront'));
}
