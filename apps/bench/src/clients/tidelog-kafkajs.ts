import * as tidelogKafkajsApi from '@tidelog/kafkajs'
import { kafkajsApiAdapter, type KafkajsApi } from './kafkajs-api.js'

// @tidelog/kafkajs driven exactly as kafkajs is (kafkajs-api.ts: same options, same calls): the
// kafkajs API on tidelog's clients. Its codecs are built in, so nothing is registered.
export const tidelogKafkajs = kafkajsApiAdapter(tidelogKafkajsApi as unknown as KafkajsApi, 'tidelog-kafkajs-bench')
