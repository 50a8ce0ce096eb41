import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import { sesSmtpPassword } from '../src/modules/messages/channels.ts';
import { listOutbox } from '../src/modules/messages/outbox.ts';
import { render } from '../src/modules/messages/templates.ts';
import { assertError, dataOf, startTestApp, type TestApp, uniqueEmail } from './helpers.ts';
import { type SmsSink, type SmtpSink, startSmsSink, startSmtpSink } from './support/mail-servers.ts';

/*
 * The channel layer through HTTP: templates per language, a test send that goes through
 * the organization's provider: the outbox folder by default, SMTP from the email provider row (the
 * organization's override) to a real SMTP server on loopback, SMS through the SMS row's HTTP API; refused
 * recipients and bounces recorded on the message.
 */
const AKID = 'AKIAMESSAGESTEST0001';
const SECRET = 'messages-test-secret-access-key-0000000001';
const SID = `AC${'a1'.repeat(16)}`;
const TOKEN = 'f0'.repeat(16);

describe('messages: templates and the channel layer', () => {
  let t: TestApp;
  let outbox: string;
  let smtp: SmtpSink;
  let sms: SmsSink;
  let su: string;
  let org: { id: string; name: string };
  let admin: string;
  let support: string;
  const call = (method: string, url: string, token: string, body?: unknown) =>
    t.call(method, url, { token, org: org.id, ...(body !== undefined ? { body } : {}) });

  before(async () => {
    outbox = await mkdtemp(join(tmpdir(), 'outbox-'));
    smtp = await startSmtpSink();
    sms = await startSmsSink();
    t = await startTestApp({ env: { MESSAGES_OUTBOX_DIR: outbox, PROVIDER_CACHE_TTL_SECONDS: '0' } });
    su = await t.superadmin();
    org = await t.createOrg({ name: 'Clinica Exemplu', language_code: 'ro' });
    admin = (await t.addMember(org.id, uniqueEmail('admin'), 'admin')).token;
    support = (await t.addMember(org.id, uniqueEmail('support'), 'customer_support')).token;
  });
  after(async () => {
    await t?.close();
    await smtp?.close();
    await sms?.close();
    await rm(outbox, { recursive: true, force: true });
  });

  const emailTemplate = {
    name: 'Reminder',
    channel: 'email',
    content: {
      en: {
        subject: 'Your visit at {{organization.name}}',
        text: 'Hello {{patient.first_name}}, see you {{appointment.date}}.',
        html: '<p>Hello <b>{{patient.first_name}}</b></p>',
      },
      ro: {
        subject: 'Vizita la {{organization.name}}',
        text: 'Bună {{patient.first_name}}, vă așteptăm {{appointment.date}}.',
        html: '<p>Bună <b>{{patient.first_name}}</b></p>',
      },
    },
  };

  it('checks templates: known placeholders, canonical languages, the parts of each channel', async () => {
    const bad = await call('POST', '/v1/message-templates', admin, {
      name: 'Bad',
      channel: 'email',
      content: { en: { subject: 'x {{patient.ssn}}', text: 'y' }, EN_gb: { subject: 's', text: 't' } },
    });
    const err = assertError(bad, 400, 'validation_error');
    assert.match(err.fields['content.en.subject'], /unknown placeholder \{\{patient\.ssn\}\}/);
    assert.ok(err.fields.content ?? err.fields['content.EN_gb'], bad.body);
    const sms = assertError(
      await call('POST', '/v1/message-templates', admin, { name: 'Bad SMS', channel: 'sms', content: { en: { subject: 's', text: 't' } } }),
      400,
      'validation_error',
    );
    assert.ok(sms.fields['content.en.subject'], JSON.stringify(sms.fields));
    const noSubject = assertError(
      await call('POST', '/v1/message-templates', admin, { name: 'No subject', channel: 'email', content: { en: { text: 't' } } }),
      400,
      'validation_error',
    );
    assert.ok(noSubject.fields['content.en.subject']);
    assert.equal((await t.db.query('select 1 from message_templates where organization_id = $1', [org.id])).rows.length, 0);
  });

  it('staff without automations.manage cannot write templates; view_org reads them', async () => {
    assertError(await call('POST', '/v1/message-templates', support, emailTemplate), 403, 'forbidden');
    const created = dataOf(await call('POST', '/v1/message-templates', admin, { ...emailTemplate, name: 'Readable' }), 201);
    assert.equal(dataOf(await call('GET', `/v1/message-templates/${created.id}`, support)).name, 'Readable');
    assertError(await call('POST', '/v1/message-templates', admin, { ...emailTemplate, name: 'Readable' }), 409, 'template_name_taken');
  });

  it('HTML parts get placeholder values escaped; text parts and subjects as they are, without line breaks in the subject', () => {
    const r = render(
      { en: { subject: 'Hi {{patient.first_name}}', text: 'Hi {{patient.first_name}}', html: '<p>{{patient.first_name}}</p>' } },
      'en',
      { 'patient.first_name': '<script>x</script>\r\nBcc: evil@example.com' },
    );
    assert.equal(r.html, '<p>&lt;script&gt;x&lt;/script&gt;\r\nBcc: evil@example.com</p>');
    assert.equal(r.subject, 'Hi <script>x</script> Bcc: evil@example.com');
    assert.equal(r.text, 'Hi <script>x</script>\r\nBcc: evil@example.com');
  });

  it('with no provider row, a send is written to the outbox folder as an .eml file that the CLI lists', async () => {
    const tpl = dataOf(await call('POST', '/v1/message-templates', admin, { ...emailTemplate, name: 'Outbox one' }), 201);
    const sent = dataOf(await call('POST', `/v1/message-templates/${tpl.id}/test`, admin, { to: 'Ana@Example.com' }));
    assert.equal(sent.status, 'sent');
    assert.equal(sent.provider, 'outbox');
    const files = (await readdir(outbox)).filter((f) => f.endsWith('.eml'));
    assert.equal(files.length, 1);
    assert.ok(files[0]!.includes(sent.message_id));
    const mail = await simpleParser(await readFile(join(outbox, files[0]!)));
    assert.equal(mail.to && 'text' in mail.to ? mail.to.text : '', 'ana@example.com');
    // The organization's language (ro) when the caller names none; both parts.
    assert.equal(mail.subject, 'Vizita la Clinica Exemplu');
    assert.match(mail.text ?? '', /Bună Ana/);
    assert.match(String(mail.html), /<b>Ana<\/b>/);
    assert.equal(mail.messageId, `<${sent.message_id}@127.0.0.1>`);
    const listed = await listOutbox(outbox);
    assert.equal(listed[0]!.subject, 'Vizita la Clinica Exemplu');
    assert.equal(listed[0]!.to, 'ana@example.com');
    const logged = dataOf(await call('GET', `/v1/messages/${sent.message_id}`, admin));
    assert.equal(logged.status, 'sent');
    assert.equal(logged.provider, 'outbox');
    assert.equal(logged.language, 'ro');
  });

  it("with the organization's email override, messages go over SMTP with the row's sender, credentials and configuration set", async () => {
    const created = await t.call('POST', '/v1/admin/platform-service-providers', {
      token: su,
      body: {
        capability: 'email',
        organization_id: org.id,
        credentials: { access_key_id: AKID, secret_access_key: SECRET },
        config: {
          region: 'eu-central-1',
          from_address: 'clinic@example.org',
          configuration_set: 'reminders',
          endpoint_url: '',
          smtp_endpoint: smtp.url,
        },
      },
    });
    dataOf(created, 201);
    const tpl = dataOf(await call('POST', '/v1/message-templates', admin, { ...emailTemplate, name: 'SMTP one' }), 201);
    const sent = dataOf(await call('POST', `/v1/message-templates/${tpl.id}/test`, admin, { to: 'bob@example.net', language: 'en-GB' }));
    assert.equal(sent.status, 'sent', JSON.stringify(sent));
    assert.equal(sent.provider, 'ses');
    assert.equal(smtp.received.length, 1);
    const got = smtp.received[0]!;
    assert.deepEqual(got.auth, { username: AKID, password: sesSmtpPassword(SECRET, 'eu-central-1') });
    assert.deepEqual(got.to, ['bob@example.net']);
    assert.equal(got.from, 'clinic@example.org');
    assert.equal(got.mail.from?.value[0]?.name, 'Clinica Exemplu');
    assert.equal(got.mail.headers.get('x-ses-configuration-set'), 'reminders');
    // en-GB finds en.
    assert.equal(got.mail.subject, 'Your visit at Clinica Exemplu');
    assert.match(String(got.mail.html), /<b>Ana<\/b>/);
    assert.match(got.mail.text ?? '', /Hello Ana/);
    // Nothing new in the outbox: the row wins over the default.
    assert.equal((await readdir(outbox)).filter((f) => f.endsWith('.eml')).length, 1);

    // The operator changes the row: the instance that wrote it sends with it at once (spec 3.3), not after its
    // provider cache's 5 minutes. (This file's app caches nothing; a second instance on the same data does.)
    const cached = await startTestApp({
      database: { db: t.db, url: null, drop: async () => undefined },
      migrate: false,
      issuer: t.issuer,
      env: { MESSAGES_OUTBOX_DIR: outbox },
    });
    try {
      const send = () =>
        cached.call('POST', `/v1/message-templates/${tpl.id}/test`, { token: admin, org: org.id, body: { to: 'bob@example.net' } });
      dataOf(await send());
      const config = { region: 'eu-central-1', from_address: 'clinic@example.org', endpoint_url: '', smtp_endpoint: smtp.url };
      const rowId = dataOf(created, 201).id;
      dataOf(
        await cached.call('PATCH', `/v1/admin/platform-service-providers/${rowId}`, {
          token: su,
          body: { config: { ...config, configuration_set: 'changed' } },
        }),
      );
      dataOf(await send());
      assert.deepEqual(
        smtp.received.slice(-2).map((m) => m.mail.headers.get('x-ses-configuration-set')),
        ['reminders', 'changed'],
      );
    } finally {
      await cached.close();
    }
  });

  it('a refused recipient and a bounced message are recorded on the message, without the address in the error', async () => {
    const tpl = dataOf(await call('POST', '/v1/message-templates', admin, { ...emailTemplate, name: 'Refusals' }), 201);
    smtp.refuse.add('nobody@example.net');
    const refused = dataOf(await call('POST', `/v1/message-templates/${tpl.id}/test`, admin, { to: 'nobody@example.net' }));
    assert.equal(refused.status, 'refused');
    assert.match(refused.error, /550/);
    assert.doesNotMatch(refused.error, /nobody@example\.net/);
    smtp.bounceAll = true;
    const bounced = dataOf(await call('POST', `/v1/message-templates/${tpl.id}/test`, admin, { to: 'carol@example.net' }));
    smtp.bounceAll = false;
    assert.equal(bounced.status, 'bounced');
    assert.match(bounced.error, /554/);
    const rows = dataOf(await call('GET', `/v1/messages?template_id=${tpl.id}&sort=created_at`, admin));
    const mine = rows.filter((m: { template_id: string }) => m.template_id === tpl.id);
    assert.deepEqual(
      mine.map((m: { status: string }) => m.status),
      ['refused', 'bounced'],
    );
    assert.ok(mine[1].bounced_at);
  });

  it('a provider row in error is not replaced by the outbox: the send fails loudly', async () => {
    await t.db.query(
      `update platform_service_providers set status = 'error', updated_at = now() where capability = 'email' and organization_id = $1`,
      [org.id],
    );
    const tpl = dataOf(await call('POST', '/v1/message-templates', admin, { ...emailTemplate, name: 'Broken provider' }), 201);
    const before = smtp.received.length;
    const r = dataOf(await call('POST', `/v1/message-templates/${tpl.id}/test`, admin, { to: 'dan@example.net' }));
    assert.equal(r.status, 'failed');
    assert.match(r.error, /provider unavailable/);
    assert.equal(smtp.received.length, before);
    await t.db.query(
      `update platform_service_providers set status = 'active', updated_at = now() where capability = 'email' and organization_id = $1`,
      [org.id],
    );
  });

  it('SMS: the outbox by default, then the SMS row of the organization over its HTTP API; an opted-out number is refused', async () => {
    const tpl = dataOf(
      await call('POST', '/v1/message-templates', admin, {
        name: 'SMS reminder',
        channel: 'sms',
        content: { en: { text: 'Hi {{patient.first_name}}, see you.' } },
      }),
      201,
    );
    assertError(await call('POST', `/v1/message-templates/${tpl.id}/test`, admin, { to: 'not a number' }), 400, 'validation_error');
    const first = dataOf(await call('POST', `/v1/message-templates/${tpl.id}/test`, admin, { to: '+40 712 345 678' }));
    assert.equal(first.provider, 'outbox');
    const file = (await readdir(outbox)).find((f) => f.includes(first.message_id))!;
    assert.match(await readFile(join(outbox, file), 'utf8'), /To: \+40712345678[\s\S]*Hi Ana, see you\./);

    dataOf(
      await t.call('POST', '/v1/admin/platform-service-providers', {
        token: su,
        body: {
          capability: 'sms',
          organization_id: org.id,
          credentials: { account_sid: SID, auth_token: TOKEN },
          config: { from_number: '+15005550006', endpoint_url: sms.url },
        },
      }),
      201,
    );
    const second = dataOf(await call('POST', `/v1/message-templates/${tpl.id}/test`, admin, { to: '+40712345679' }));
    assert.equal(second.status, 'sent', JSON.stringify(second));
    assert.equal(second.provider, 'twilio');
    assert.deepEqual(sms.received.at(-1), {
      to: '+40712345679',
      from: '+15005550006',
      body: 'Hi Ana, see you.',
      account: SID,
      authorization: `Basic ${Buffer.from(`${SID}:${TOKEN}`).toString('base64')}`,
    });
    sms.refuse.add('+40712345670');
    const refused = dataOf(await call('POST', `/v1/message-templates/${tpl.id}/test`, admin, { to: '+40712345670' }));
    assert.equal(refused.status, 'refused');
    assert.match(refused.error, /21610/);
    assert.doesNotMatch(refused.error, /40712345670/);
  });

  it('a patient reads its own messages only; staff without messages.view_org none', async () => {
    const patient = await t.addPatient(org.id, uniqueEmail('pat'));
    await t.acceptOrgPurposes(org.id, patient.userId);
    const mine = await t.call('GET', '/v1/messages', { token: patient.token, org: org.id });
    assert.deepEqual(dataOf(mine), []);
    const specialist = (await t.addMember(org.id, uniqueEmail('spec'), 'specialist')).token;
    assertError(await call('GET', '/v1/messages', specialist), 403, 'forbidden');
  });

  it('the SMTP endpoint of a provider row goes through the outgoing-URL guard', async () => {
    const other = await t.createOrg({ name: 'Guarded' });
    const res = await t.call('POST', '/v1/admin/platform-service-providers', {
      token: su,
      body: {
        capability: 'email',
        organization_id: other.id,
        credentials: { access_key_id: AKID, secret_access_key: SECRET },
        config: {
          region: 'eu-central-1',
          from_address: 'a@example.org',
          configuration_set: 'x',
          endpoint_url: '',
          smtp_endpoint: 'http://127.0.0.1:25',
        },
      },
    });
    const err = assertError(res, 400, 'validation_error');
    assert.match(err.fields['config.smtp_endpoint'], /smtp or smtps/);
  });
});
