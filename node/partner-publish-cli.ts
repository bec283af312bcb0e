// `npm run partner:publish -- --app <name> --version <v> <manifest.json>`: publishes a partner app's documents through
// the admin API at LASTUNIT_URL with LASTUNIT_ADMIN_KEY (docs/partners.md). Exit 0 published (or already published
// with the same documents), 1 refused (every reason printed), 2 bad arguments or environment.
import { readFile } from 'node:fs/promises';
import { loadPublishConfig } from './config.js';
import { documentsOfManifest, publishDocuments, PublishRefused } from './partner-publish.js';
import { runEntry } from './entry.js';

void runEntry({
  config: (env) => loadPublishConfig(env, process.argv.slice(2)),
  oneShot: true,
  async start(c) {
    let json: unknown;
    try {
      json = JSON.parse(await readFile(c.manifestPath, 'utf8'));
    } catch (err) {
      throw new PublishRefused(`cannot read ${c.manifestPath}: ${(err as Error).message}`);
    }
    const documents = documentsOfManifest(json);
    const p = await publishDocuments({ url: c.url, adminKey: c.adminKey, app: c.app, version: c.version, documents });
    const what = p.replayed ? 'already published with these documents' : 'published';
    return {
      lines: [`${p.app}@${p.version}: ${what} (${p.documentCount} documents, ${p.publishedAt}) at ${c.url}`],
      stop: async () => {},
    };
  },
});
