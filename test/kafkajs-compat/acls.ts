import type { KafkaModule } from './types.js'

type AnyAcl = { resourceType: number; resourceName: string; resourcePatternType: number; principal: string; host: string; operation: number; permissionType: number }

/**
 * "Admin: ACLs" (kafkajs' admin docs): createAcls, describeAcls (all, by principal, MATCH) and
 * deleteAcls with kafkajs' enums, against a cluster with an authorizer where the program's
 * principal may do everything; plus kafkajs' argument checks and the broker's refusals.
 */
export async function aclsProgram(lib: KafkaModule, brokers: string[], prefix: string) {
  const { Kafka, logLevel, AclResourceTypes: R, AclOperationTypes: O, AclPermissionTypes: P, ResourcePatternTypes: T } = lib
  const kafka = new Kafka({ clientId: 'my-app', brokers, logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  await admin.connect()
  const topic = `${prefix}-acl-topic`
  const acl: AnyAcl[] = [
    { resourceType: R.TOPIC, resourceName: topic, resourcePatternType: T.LITERAL, principal: 'User:alice', host: '*', operation: O.READ, permissionType: P.ALLOW },
    { resourceType: R.TOPIC, resourceName: topic, resourcePatternType: T.LITERAL, principal: 'User:alice', host: '*', operation: O.WRITE, permissionType: P.ALLOW },
    { resourceType: R.TOPIC, resourceName: `${prefix}-acl-`, resourcePatternType: T.PREFIXED, principal: 'User:bob', host: '10.0.0.1', operation: O.DESCRIBE, permissionType: P.DENY },
    { resourceType: R.GROUP, resourceName: `${prefix}-group`, resourcePatternType: T.LITERAL, principal: 'User:alice', host: '*', operation: O.READ, permissionType: P.ALLOW },
  ]
  const created = await admin.createAcls({ acl: acl as never })

  const strip = (s: string) => s.replaceAll(prefix, '')
  const errorOf = async (p: Promise<unknown>) => {
    try {
      await p
      return 'no error'
    } catch (e) {
      const x = e as { name: string; message: string; type?: string }
      return `${x.name}${x.type ? ` ${x.type}` : ''}: ${strip(x.message)}`
    }
  }
  const resources = (r: { resources: { resourceName: string; acls: unknown[] }[] }) =>
    r.resources
      .filter((x) => x.resourceName.startsWith(prefix))
      .map((x) => ({ ...x, resourceName: strip(x.resourceName), acls: x.acls.map((a) => JSON.stringify(a)).sort() }))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
  const anyFilter = { resourceType: R.ANY, resourcePatternType: T.ANY, operation: O.ANY, permissionType: P.ANY }

  const all = resources((await admin.describeAcls(anyFilter as never)) as never)
  const alice = resources((await admin.describeAcls({ ...anyFilter, principal: 'User:alice' } as never)) as never)
  const matching = resources((await admin.describeAcls({ ...anyFilter, resourceType: R.TOPIC, resourceName: topic, resourcePatternType: T.MATCH } as never)) as never)
  const refused = {
    empty: await errorOf(admin.createAcls({ acl: [] })),
    badOperation: await errorOf(admin.createAcls({ acl: [{ ...acl[0]!, operation: 99 }] as never })),
    badHost: await errorOf(admin.createAcls({ acl: [{ ...acl[0]!, host: undefined }] as never })),
    describeBadType: await errorOf(admin.describeAcls({ ...anyFilter, resourceType: 42 } as never)),
    deleteEmpty: await errorOf(admin.deleteAcls({ filters: [] })),
    // The broker's own refusal: a principal must be "type:name".
    brokerRefusal: await errorOf(admin.createAcls({ acl: [{ ...acl[0]!, principal: 'alice' }] as never })),
  }

  const deleted = (await admin.deleteAcls({
    filters: [
      { ...anyFilter, resourceType: R.TOPIC, resourceName: topic, resourcePatternType: T.LITERAL, principal: 'User:alice' },
      { ...anyFilter, resourceType: R.GROUP, resourceName: `${prefix}-group` },
      { ...anyFilter, resourceType: R.TOPIC, resourceName: `${prefix}-none` },
    ] as never,
  })) as unknown as { filterResponses: { errorCode: number; errorMessage: string | null; matchingAcls: (AnyAcl & { errorCode: number })[] }[] }
  const after = resources((await admin.describeAcls(anyFilter as never)) as never)
  await admin.deleteAcls({ filters: [{ ...anyFilter, resourceType: R.TOPIC, resourceName: `${prefix}-acl-`, resourcePatternType: T.PREFIXED }] as never })
  const end = resources((await admin.describeAcls(anyFilter as never)) as never)
  await admin.disconnect()
  return {
    created,
    all,
    alice,
    matching,
    refused,
    deleted: deleted.filterResponses.map((f) => ({ ...f, matchingAcls: f.matchingAcls.map((a) => strip(JSON.stringify(a))).sort() })),
    after,
    end,
  }
}
