// Two NestJS apps over the Kafka transport (@nestjs/microservices loads `kafkajs` by name,
// which the test resolves to @tidelog/kafkajs): a microservice with an event handler and a
// request-response handler, and a client app. Plain CommonJS, decorators applied by hand.
// Prints one JSON line with what the client observed.
require('reflect-metadata')
const { Controller, Module } = require('@nestjs/common')
const { NestFactory } = require('@nestjs/core')
const { ClientsModule, EventPattern, MessagePattern, Payload, Transport } = require('@nestjs/microservices')
const { lastValueFrom } = require('rxjs')

const brokers = process.argv[2].split(',')
const kafka = (clientId) => ({ client: { clientId, brokers, retry: { initialRetryTime: 100, retries: 8 } }, consumer: { groupId: `${clientId}-group`, heartbeatInterval: 500, sessionTimeout: 10000 }, run: { partitionsConsumedConcurrently: 1 } })

const events = []
class MathController {
  sum(numbers) {
    return numbers.reduce((a, b) => a + b, 0)
  }
  created(user) {
    events.push(user)
  }
}
const decorate = (proto, name, decorators) => {
  const d = Object.getOwnPropertyDescriptor(proto, name)
  for (const dec of decorators) dec(proto, name, d)
}
decorate(MathController.prototype, 'sum', [MessagePattern('math.sum')])
decorate(MathController.prototype, 'created', [EventPattern('user.created')])
Payload()(MathController.prototype, 'sum', 0)
Payload()(MathController.prototype, 'created', 0)
Controller()(MathController)
class ServerModule {}
Module({ controllers: [MathController] })(ServerModule)

class ClientModule {}
Module({ imports: [ClientsModule.register([{ name: 'MATH', transport: Transport.KAFKA, options: kafka('math-client') }])] })(ClientModule)

async function main() {
  const server = await NestFactory.createMicroservice(ServerModule, { transport: Transport.KAFKA, options: kafka('math-server'), logger: false })
  await server.listen()
  const app = await NestFactory.createApplicationContext(ClientModule, { logger: false })
  const client = app.get('MATH')
  client.subscribeToResponseOf('math.sum')
  await client.connect()
  const sums = []
  for (const numbers of [[1, 2, 3], [10, 20], [7]]) sums.push(await lastValueFrom(client.send('math.sum', numbers)))
  for (let id = 1; id <= 3; id++) await lastValueFrom(client.emit('user.created', { id, name: `user-${id}` }))
  const end = Date.now() + 30000
  while (events.length < 3 && Date.now() < end) await new Promise((r) => setTimeout(r, 50))
  const kafkajs = require.resolve('kafkajs')
  await app.close()
  await server.close()
  console.log(JSON.stringify({ sums, events: events.sort((a, b) => a.id - b.id), kafkajs }))
}
main().then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  },
)
