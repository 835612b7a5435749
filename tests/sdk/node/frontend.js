// Runs the official browser SDK (unleash-proxy-client) once against a server's Frontend API, in
// Node 20 with its global fetch: starts it with the first context, then for each context (the
// first, then each one given to updateContext, which fetches the flags again) records what the
// SDK answers for each flag, sends its metrics, and prints everything as JSON.
// Usage: node frontend.js '{"url": ".../api/frontend", "token": "...", "flags": ["a"],
//   "contexts": [{"userId": "alice"}], "usePOSTrequests": false}'
const { UnleashClient, InMemoryStorageProvider } = require('unleash-proxy-client');

async function main() {
  const { url, token, flags, contexts, usePOSTrequests } = JSON.parse(process.argv[2]);
  const client = new UnleashClient({
    url,
    clientKey: token,
    appName: 'flagadmin-frontend-test',
    context: contexts[0],
    refreshInterval: 0, // fetches only when started and when the context changes
    metricsInterval: 0, // metrics are sent once, below
    storageProvider: new InMemoryStorageProvider(),
    usePOSTrequests: Boolean(usePOSTrequests),
  });
  const errors = [];
  client.on('error', (error) => errors.push(error));
  // Ready once the first fetch succeeded; an error (a refused token) ends the wait too.
  const ready = new Promise((resolve) => {
    client.on('ready', resolve);
    client.on('error', resolve);
  });
  await client.start();
  await ready;

  const seen = [];
  for (const [index, context] of contexts.entries()) {
    if (index > 0) {
      await client.updateContext(context);
    }
    const answers = {};
    for (const flag of flags) {
      const variant = client.getVariant(flag);
      answers[flag] = { enabled: client.isEnabled(flag), variant };
    }
    seen.push({ answers, toggles: client.getAllToggles().map((toggle) => toggle.name) });
  }
  await client.sendMetrics();
  client.stop();
  process.stdout.write(JSON.stringify({ seen, errors, etag: client.etag }));
}

main().catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
