from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DataType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DATA_TYPE_UNSET: _ClassVar[DataType]
    DATA_TYPE_STRING: _ClassVar[DataType]
    DATA_TYPE_BOOL: _ClassVar[DataType]
    DATA_TYPE_FLOAT64: _ClassVar[DataType]

class DatasetType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DATASET_UNKNOWN: _ClassVar[DatasetType]
    DATASET_TRAINING: _ClassVar[DatasetType]
    DATASET_VALIDATION: _ClassVar[DatasetType]

class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STATUS_UNKNOWN: _ClassVar[Status]
    STATUS_SUCCESS: _ClassVar[Status]
    STATUS_FAILURE: _ClassVar[Status]
    STATUS_RUNNING: _ClassVar[Status]

class SortOrder(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ORDER_UNSPECIFIED: _ClassVar[SortOrder]
    ORDER_ASC: _ClassVar[SortOrder]
    ORDER_DESC: _ClassVar[SortOrder]

class AggregationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AGGREGATION_UNSET: _ClassVar[AggregationType]
    AGGREGATION_AVG: _ClassVar[AggregationType]
    AGGREGATION_MEDIAN: _ClassVar[AggregationType]
    AGGREGATION_MIN: _ClassVar[AggregationType]
    AGGREGATION_MAX: _ClassVar[AggregationType]
DATA_TYPE_UNSET: DataType
DATA_TYPE_STRING: DataType
DATA_TYPE_BOOL: DataType
DATA_TYPE_FLOAT64: DataType
DATASET_UNKNOWN: DatasetType
DATASET_TRAINING: DatasetType
DATASET_VALIDATION: DatasetType
STATUS_UNKNOWN: Status
STATUS_SUCCESS: Status
STATUS_FAILURE: Status
STATUS_RUNNING: Status
ORDER_UNSPECIFIED: SortOrder
ORDER_ASC: SortOrder
ORDER_DESC: SortOrder
AGGREGATION_UNSET: AggregationType
AGGREGATION_AVG: AggregationType
AGGREGATION_MEDIAN: AggregationType
AGGREGATION_MIN: AggregationType
AGGREGATION_MAX: AggregationType

class Experiment(_message.Message):
    __slots__ = ("name", "description", "user", "time_created_secs", "hparam_infos", "metric_infos")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    TIME_CREATED_SECS_FIELD_NUMBER: _ClassVar[int]
    HPARAM_INFOS_FIELD_NUMBER: _ClassVar[int]
    METRIC_INFOS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    user: str
    time_created_secs: float
    hparam_infos: _containers.RepeatedCompositeFieldContainer[HParamInfo]
    metric_infos: _containers.RepeatedCompositeFieldContainer[MetricInfo]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., user: _Optional[str] = ..., time_created_secs: _Optional[float] = ..., hparam_infos: _Optional[_Iterable[_Union[HParamInfo, _Mapping]]] = ..., metric_infos: _Optional[_Iterable[_Union[MetricInfo, _Mapping]]] = ...) -> None: ...

class HParamInfo(_message.Message):
    __slots__ = ("name", "display_name", "description", "type", "domain_discrete", "domain_interval", "differs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DOMAIN_DISCRETE_FIELD_NUMBER: _ClassVar[int]
    DOMAIN_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    DIFFERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    display_name: str
    description: str
    type: DataType
    domain_discrete: _struct_pb2.ListValue
    domain_interval: Interval
    differs: bool
    def __init__(self, name: _Optional[str] = ..., display_name: _Optional[str] = ..., description: _Optional[str] = ..., type: _Optional[_Union[DataType, str]] = ..., domain_discrete: _Optional[_Union[_struct_pb2.ListValue, _Mapping]] = ..., domain_interval: _Optional[_Union[Interval, _Mapping]] = ..., differs: _Optional[bool] = ...) -> None: ...

class Interval(_message.Message):
    __slots__ = ("min_value", "max_value")
    MIN_VALUE_FIELD_NUMBER: _ClassVar[int]
    MAX_VALUE_FIELD_NUMBER: _ClassVar[int]
    min_value: float
    max_value: float
    def __init__(self, min_value: _Optional[float] = ..., max_value: _Optional[float] = ...) -> None: ...

class MetricName(_message.Message):
    __slots__ = ("group", "tag")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    group: str
    tag: str
    def __init__(self, group: _Optional[str] = ..., tag: _Optional[str] = ...) -> None: ...

class MetricInfo(_message.Message):
    __slots__ = ("name", "display_name", "description", "dataset_type")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DATASET_TYPE_FIELD_NUMBER: _ClassVar[int]
    name: MetricName
    display_name: str
    description: str
    dataset_type: DatasetType
    def __init__(self, name: _Optional[_Union[MetricName, _Mapping]] = ..., display_name: _Optional[str] = ..., description: _Optional[str] = ..., dataset_type: _Optional[_Union[DatasetType, str]] = ...) -> None: ...

class SessionGroup(_message.Message):
    __slots__ = ("name", "hparams", "metric_values", "sessions", "monitor_url")
    class HparamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _struct_pb2.Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    HPARAMS_FIELD_NUMBER: _ClassVar[int]
    METRIC_VALUES_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    MONITOR_URL_FIELD_NUMBER: _ClassVar[int]
    name: str
    hparams: _containers.MessageMap[str, _struct_pb2.Value]
    metric_values: _containers.RepeatedCompositeFieldContainer[MetricValue]
    sessions: _containers.RepeatedCompositeFieldContainer[Session]
    monitor_url: str
    def __init__(self, name: _Optional[str] = ..., hparams: _Optional[_Mapping[str, _struct_pb2.Value]] = ..., metric_values: _Optional[_Iterable[_Union[MetricValue, _Mapping]]] = ..., sessions: _Optional[_Iterable[_Union[Session, _Mapping]]] = ..., monitor_url: _Optional[str] = ...) -> None: ...

class MetricValue(_message.Message):
    __slots__ = ("name", "value", "training_step", "wall_time_secs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    TRAINING_STEP_FIELD_NUMBER: _ClassVar[int]
    WALL_TIME_SECS_FIELD_NUMBER: _ClassVar[int]
    name: MetricName
    value: float
    training_step: int
    wall_time_secs: float
    def __init__(self, name: _Optional[_Union[MetricName, _Mapping]] = ..., value: _Optional[float] = ..., training_step: _Optional[int] = ..., wall_time_secs: _Optional[float] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ("name", "start_time_secs", "end_time_secs", "status", "model_uri", "metric_values", "monitor_url")
    NAME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_SECS_FIELD_NUMBER: _ClassVar[int]
    END_TIME_SECS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MODEL_URI_FIELD_NUMBER: _ClassVar[int]
    METRIC_VALUES_FIELD_NUMBER: _ClassVar[int]
    MONITOR_URL_FIELD_NUMBER: _ClassVar[int]
    name: str
    start_time_secs: float
    end_time_secs: float
    status: Status
    model_uri: str
    metric_values: _containers.RepeatedCompositeFieldContainer[MetricValue]
    monitor_url: str
    def __init__(self, name: _Optional[str] = ..., start_time_secs: _Optional[float] = ..., end_time_secs: _Optional[float] = ..., status: _Optional[_Union[Status, str]] = ..., model_uri: _Optional[str] = ..., metric_values: _Optional[_Iterable[_Union[MetricValue, _Mapping]]] = ..., monitor_url: _Optional[str] = ...) -> None: ...

class GetExperimentRequest(_message.Message):
    __slots__ = ("experiment_name", "include_metrics", "hparams_limit")
    EXPERIMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_METRICS_FIELD_NUMBER: _ClassVar[int]
    HPARAMS_LIMIT_FIELD_NUMBER: _ClassVar[int]
    experiment_name: str
    include_metrics: bool
    hparams_limit: int
    def __init__(self, experiment_name: _Optional[str] = ..., include_metrics: _Optional[bool] = ..., hparams_limit: _Optional[int] = ...) -> None: ...

class ListSessionGroupsRequest(_message.Message):
    __slots__ = ("experiment_name", "allowed_statuses", "col_params", "aggregation_type", "aggregation_metric", "start_index", "slice_size", "include_metrics")
    EXPERIMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_STATUSES_FIELD_NUMBER: _ClassVar[int]
    COL_PARAMS_FIELD_NUMBER: _ClassVar[int]
    AGGREGATION_TYPE_FIELD_NUMBER: _ClassVar[int]
    AGGREGATION_METRIC_FIELD_NUMBER: _ClassVar[int]
    START_INDEX_FIELD_NUMBER: _ClassVar[int]
    SLICE_SIZE_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_METRICS_FIELD_NUMBER: _ClassVar[int]
    experiment_name: str
    allowed_statuses: _containers.RepeatedScalarFieldContainer[Status]
    col_params: _containers.RepeatedCompositeFieldContainer[ColParams]
    aggregation_type: AggregationType
    aggregation_metric: MetricName
    start_index: int
    slice_size: int
    include_metrics: bool
    def __init__(self, experiment_name: _Optional[str] = ..., allowed_statuses: _Optional[_Iterable[_Union[Status, str]]] = ..., col_params: _Optional[_Iterable[_Union[ColParams, _Mapping]]] = ..., aggregation_type: _Optional[_Union[AggregationType, str]] = ..., aggregation_metric: _Optional[_Union[MetricName, _Mapping]] = ..., start_index: _Optional[int] = ..., slice_size: _Optional[int] = ..., include_metrics: _Optional[bool] = ...) -> None: ...

class ColParams(_message.Message):
    __slots__ = ("metric", "hparam", "order", "missing_values_first", "filter_regexp", "filter_interval", "filter_discrete", "exclude_missing_values", "include_in_result")
    METRIC_FIELD_NUMBER: _ClassVar[int]
    HPARAM_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    MISSING_VALUES_FIRST_FIELD_NUMBER: _ClassVar[int]
    FILTER_REGEXP_FIELD_NUMBER: _ClassVar[int]
    FILTER_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    FILTER_DISCRETE_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_MISSING_VALUES_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_IN_RESULT_FIELD_NUMBER: _ClassVar[int]
    metric: MetricName
    hparam: str
    order: SortOrder
    missing_values_first: bool
    filter_regexp: str
    filter_interval: Interval
    filter_discrete: _struct_pb2.ListValue
    exclude_missing_values: bool
    include_in_result: bool
    def __init__(self, metric: _Optional[_Union[MetricName, _Mapping]] = ..., hparam: _Optional[str] = ..., order: _Optional[_Union[SortOrder, str]] = ..., missing_values_first: _Optional[bool] = ..., filter_regexp: _Optional[str] = ..., filter_interval: _Optional[_Union[Interval, _Mapping]] = ..., filter_discrete: _Optional[_Union[_struct_pb2.ListValue, _Mapping]] = ..., exclude_missing_values: _Optional[bool] = ..., include_in_result: _Optional[bool] = ...) -> None: ...

class ListSessionGroupsResponse(_message.Message):
    __slots__ = ("session_groups", "total_size")
    SESSION_GROUPS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    session_groups: _containers.RepeatedCompositeFieldContainer[SessionGroup]
    total_size: int
    def __init__(self, session_groups: _Optional[_Iterable[_Union[SessionGroup, _Mapping]]] = ..., total_size: _Optional[int] = ...) -> None: ...

class ListMetricEvalsRequest(_message.Message):
    __slots__ = ("experiment_name", "session_name", "metric_name")
    EXPERIMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    SESSION_NAME_FIELD_NUMBER: _ClassVar[int]
    METRIC_NAME_FIELD_NUMBER: _ClassVar[int]
    experiment_name: str
    session_name: str
    metric_name: MetricName
    def __init__(self, experiment_name: _Optional[str] = ..., session_name: _Optional[str] = ..., metric_name: _Optional[_Union[MetricName, _Mapping]] = ...) -> None: ...
