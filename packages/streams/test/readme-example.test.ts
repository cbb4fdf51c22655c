import { expect, it } from 'vitest'
import { Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder, TopologyTestDriver } from '@tidelog/streams'

// The README's word-count example, as written there, with the outputs its comments promise.
it('the README word count gives the counts its comments show', () => {
  const S = Serdes.String()
  const builder = new StreamsBuilder()
  builder.stream('text-input', Consumed.with(S, S))
    .flatMapValues((line) => line.toLowerCase().split(/\W+/).filter(Boolean))
    .groupBy((_key, word) => word, Grouped.with(S, S))
    .count(Materialized.as('counts-store'))
    .toStream()
    .to('word-counts', Produced.with(S, Serdes.Long()))
  const topology = builder.build()
  expect(topology.describe().toString()).toContain('Sink: counts-store-repartition-sink (topic: counts-store-repartition)')

  const driver = new TopologyTestDriver(topology, { 'application.id': 'wordcount', 'default.key.serde': S, 'default.value.serde': S })
  const input = driver.createInputTopic('text-input', S, S)
  const output = driver.createOutputTopic('word-counts', S, Serdes.Long())
  input.pipeInput(null, 'hello kafka streams', 1000)
  input.pipeInput(null, 'hello again', 2000)
  expect(output.readKeyValuesToList()).toEqual([
    { key: 'hello', value: 1 }, { key: 'kafka', value: 1 }, { key: 'streams', value: 1 }, { key: 'hello', value: 2 }, { key: 'again', value: 1 },
  ])
  expect(driver.getKeyValueStore<string, number>('counts-store')!.get('hello')).toBe(2)
  expect(driver.producedTopicNames()).toEqual(['wordcount-counts-store-repartition', 'wordcount-counts-store-changelog', 'word-counts'])
  driver.close()
})
