/** What each streams program (the Node one and the Java one) is told to run. */
export type StreamsScenario = 'S1' | 'S2' | 'S3' | 'S4'

export interface StreamsArgs {
  scenario: StreamsScenario
  bootstrap: string
  appId: string
  input: string
  output: string
  /** S4's table topic. */
  table?: string
  stateDir: string
  commitIntervalMs: number
}
