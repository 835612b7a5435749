// Runs the official Node SDK once against a server: fetches the flags, evaluates one flag for
// each context given, prints the answers as JSON, then stops and sends its metrics.
// Usage: node evaluate.js '{"url": ".../api/", "token": "...", "flag": "...", "contexts": [{}]}'
// With "variants": true, each answer is the variant's name instead (getVariant).
const { startUnleash, InMemStorageProvider } = require('unleash-client');

async function main() {
  const { url, token, flag, contexts, appName, projectName, variants } = JSON.parse(
    process.argv[2],
  );
  const unleash = await startUnleash({
    url,
    appName: appName || 'flagadmin-sdk-test-node',
    projectName: projectName || undefined,
    customHeaders: { Authorization: token },
    storageProvider: new InMemStorageProvider(),
    refreshInterval: 60000,
    metricsInterval: 60000,
    skipInstanceCountWarning: true,
  });
  const answers = contexts.map((context) =>
    variants ? unleash.getVariant(flag, context).name : unleash.isEnabled(flag, context),
  );
  await unleash.destroyWithFlush();
  process.stdout.write(JSON.stringify(answers));
}

main().catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
