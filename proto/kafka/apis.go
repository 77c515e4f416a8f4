package kafka

// API keys this package reads the body of.
const (
	apiProduce       = 0
	apiFetch         = 1
	apiListOffsets   = 2
	apiMetadata      = 3
	apiSaslHandshake = 17
)

// apiNames are the API keys' names, from the Kafka protocol guide.
var apiNames = [...]string{
	0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 4: "LeaderAndIsr", 5: "StopReplica",
	6: "UpdateMetadata", 7: "ControlledShutdown", 8: "OffsetCommit", 9: "OffsetFetch",
	10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup",
	15: "DescribeGroups", 16: "ListGroups", 17: "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics",
	20: "DeleteTopics", 21: "DeleteRecords", 22: "InitProducerId", 23: "OffsetForLeaderEpoch",
	24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 27: "WriteTxnMarkers",
	28: "TxnOffsetCommit", 29: "DescribeAcls", 30: "CreateAcls", 31: "DeleteAcls", 32: "DescribeConfigs",
	33: "AlterConfigs", 34: "AlterReplicaLogDirs", 35: "DescribeLogDirs", 36: "SaslAuthenticate",
	37: "CreatePartitions", 38: "CreateDelegationToken", 39: "RenewDelegationToken",
	40: "ExpireDelegationToken", 41: "DescribeDelegationToken", 42: "DeleteGroups", 43: "ElectLeaders",
	44: "IncrementalAlterConfigs", 45: "AlterPartitionReassignments", 46: "ListPartitionReassignments",
	47: "OffsetDelete", 48: "DescribeClientQuotas", 49: "AlterClientQuotas",
	50: "DescribeUserScramCredentials", 51: "AlterUserScramCredentials", 52: "Vote", 53: "BeginQuorumEpoch",
	54: "EndQuorumEpoch", 55: "DescribeQuorum", 56: "AlterPartition", 57: "UpdateFeatures", 58: "Envelope",
	59: "FetchSnapshot", 60: "DescribeCluster", 61: "DescribeProducers", 62: "BrokerRegistration",
	63: "BrokerHeartbeat", 64: "UnregisterBroker", 65: "DescribeTransactions", 66: "ListTransactions",
	67: "AllocateProducerIds", 68: "ConsumerGroupHeartbeat", 69: "ConsumerGroupDescribe",
	71: "GetTelemetrySubscriptions", 72: "PushTelemetry", 74: "ListClientMetricsResources",
	75: "DescribeTopicPartitions",
}

// flexibleFrom is the first flexible version (request header v2, compact
// strings and arrays, tagged fields) of the APIs whose headers are read;
// APIs absent here are read as never flexible, which only loses their
// label's topic (they have none) and no framing.
var flexibleFrom = map[int16]int16{
	apiProduce: 9, apiFetch: 12, apiListOffsets: 6, apiMetadata: 9, 8: 8, 9: 6, 10: 3, 11: 6, 12: 4,
	13: 4, 14: 4, 15: 5, 16: 3, 18: 3, 19: 5, 20: 4, 21: 2, 22: 2, 23: 4, 24: 3, 25: 3, 26: 3, 27: 1,
	28: 3, 29: 2, 30: 2, 31: 2, 32: 4, 33: 2, 34: 2, 35: 2, 36: 2, 37: 2, 42: 2, 43: 2,
}

// firstFlexible returns the first flexible version of api (a version past
// any in use when it has none).
func firstFlexible(api int16) int16 {
	if v, ok := flexibleFrom[api]; ok {
		return v
	}
	return 1 << 14
}
