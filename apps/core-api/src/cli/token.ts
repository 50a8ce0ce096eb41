import { parseConfig } from '../config.ts';
import { createDevIssuer } from '../platform/auth/dev-issuer.ts';

/** `npm run -s token -- <email>`: a bearer token from the development issuer on stdout, nothing else. */
async function main(): Promise<void> {
  const email = process.argv[2];
  if (!email || !/^[^@\s]+@[^@\s]+$/.test(email)) {
    process.stderr.write('usage: npm run -s token -- <email>\n');
    process.exit(2);
  }
  const config = parseConfig(process.env);
  if (config.auth.mode !== 'development') {
    process.stderr.write(
      'npm run -s token works only with the development issuer (AUTH_JWKS_URL is set): get tokens from your identity provider.\n',
    );
    process.exit(1);
  }
  const issuer = await createDevIssuer({ dataDir: config.dataDir, issuer: config.auth.issuer, audience: config.auth.audience });
  process.stdout.write(`${await issuer.sign(email)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
});
