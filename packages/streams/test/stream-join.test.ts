import { expect, it } from 'vitest'
import { Consumed, JoinWindows, Produced, Serdes, StreamJoined, StreamsBuilder, TopologyTestDriver } from '@tidelog/streams'

const S = Serdes.String()

function joinDriver(joined: StreamJoined<string, string, string>) {
  const b = new StreamsBuilder()
  const left = b.stream('l', Consumed.with(S, S))
  const right = b.stream('r', Consumed.with(S, S))
  left.leftJoin(right, (l, r, k) => `${k}:${l}+${r}`, JoinWindows.ofTimeDifferenceAndGrace(10, 0), joined).to('out', Produced.with(S, S))
  const driver = new TopologyTestDriver(b.build(), { 'application.id': 'sj' })
  return { driver, l: driver.createInputTopic('l', S, S), r: driver.createInputTopic('r', S, S), out: driver.createOutputTopic('out', S, S) }
}

it('a left join writes its window stores\' changelogs (or not, with logging disabled), forwards null-key left records at once and counts null values as dropped', () => {
  const logged = joinDriver(StreamJoined.with(S, S, S).withStoreName('pay'))
  logged.l.pipeInput('a', 'A', 0)
  logged.r.pipeInput('a', 'x', 5)
  logged.l.pipeInput(null, 'N', 6)      // KIP-962: never joinable, so emitted at once with a null right side
  logged.r.pipeInput('b', null, 7)      // a null value cannot join: dropped and counted
  expect(logged.out.readKeyValuesToList()).toEqual([{ key: 'a', value: 'a:A+x' }, { key: null, value: 'null:N+null' }])
  expect(logged.driver.metrics()[0]!.value).toBe(1)
  expect(logged.driver.producedTopicNames().sort()).toEqual(['out', 'sj-pay-left-shared-join-store-changelog', 'sj-pay-outer-other-join-store-changelog', 'sj-pay-this-join-store-changelog'])
  logged.driver.close()

  const quiet = joinDriver(StreamJoined.with(S, S, S).withLoggingDisabled())
  quiet.l.pipeInput('a', 'A', 0)
  quiet.r.pipeInput('a', 'x', 5)
  expect(quiet.out.readValuesToList()).toEqual(['a:A+x'])
  expect(quiet.driver.producedTopicNames()).toEqual(['out'])
  quiet.driver.close()
})

it('StreamJoined and JoinWindows refuse bad arguments with clear errors', () => {
  expect(() => StreamJoined.with(S, S, S).withName('')).toThrow(TypeError)
  expect(() => JoinWindows.ofTimeDifferenceAndGrace(10, -1)).toThrow('Grace period must not be negative.')
  expect(() => JoinWindows.ofTimeDifferenceWithNoGrace(1.5)).toThrow(TypeError)
})
