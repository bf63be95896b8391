from google.protobuf import any_pb2 as _any_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PropertyType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNKNOWN: _ClassVar[PropertyType]
    INT: _ClassVar[PropertyType]
    DOUBLE: _ClassVar[PropertyType]
    STRING: _ClassVar[PropertyType]
    STRUCT: _ClassVar[PropertyType]
    PROTO: _ClassVar[PropertyType]
    BOOLEAN: _ClassVar[PropertyType]
UNKNOWN: PropertyType
INT: PropertyType
DOUBLE: PropertyType
STRING: PropertyType
STRUCT: PropertyType
PROTO: PropertyType
BOOLEAN: PropertyType

class Value(_message.Message):
    __slots__ = ("int_value", "double_value", "string_value", "struct_value", "proto_value", "bool_value")
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_VALUE_FIELD_NUMBER: _ClassVar[int]
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    STRUCT_VALUE_FIELD_NUMBER: _ClassVar[int]
    PROTO_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    int_value: int
    double_value: float
    string_value: str
    struct_value: _struct_pb2.Struct
    proto_value: _any_pb2.Any
    bool_value: bool
    def __init__(self, int_value: _Optional[int] = ..., double_value: _Optional[float] = ..., string_value: _Optional[str] = ..., struct_value: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., proto_value: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., bool_value: _Optional[bool] = ...) -> None: ...

class Artifact(_message.Message):
    __slots__ = ("id", "name", "type_id", "type", "uri", "external_id", "properties", "custom_properties", "state", "create_time_since_epoch", "last_update_time_since_epoch", "system_metadata")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[Artifact.State]
        PENDING: _ClassVar[Artifact.State]
        LIVE: _ClassVar[Artifact.State]
        MARKED_FOR_DELETION: _ClassVar[Artifact.State]
        DELETED: _ClassVar[Artifact.State]
        ABANDONED: _ClassVar[Artifact.State]
        REFERENCE: _ClassVar[Artifact.State]
    UNKNOWN: Artifact.State
    PENDING: Artifact.State
    LIVE: Artifact.State
    MARKED_FOR_DELETION: Artifact.State
    DELETED: Artifact.State
    ABANDONED: Artifact.State
    REFERENCE: Artifact.State
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    class CustomPropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_ID_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_SINCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_UPDATE_TIME_SINCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_METADATA_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    type_id: int
    type: str
    uri: str
    external_id: str
    properties: _containers.MessageMap[str, Value]
    custom_properties: _containers.MessageMap[str, Value]
    state: Artifact.State
    create_time_since_epoch: int
    last_update_time_since_epoch: int
    system_metadata: _any_pb2.Any
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., type_id: _Optional[int] = ..., type: _Optional[str] = ..., uri: _Optional[str] = ..., external_id: _Optional[str] = ..., properties: _Optional[_Mapping[str, Value]] = ..., custom_properties: _Optional[_Mapping[str, Value]] = ..., state: _Optional[_Union[Artifact.State, str]] = ..., create_time_since_epoch: _Optional[int] = ..., last_update_time_since_epoch: _Optional[int] = ..., system_metadata: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class ArtifactType(_message.Message):
    __slots__ = ("id", "name", "version", "description", "external_id", "properties", "base_type")
    class SystemDefinedBaseType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNSET: _ClassVar[ArtifactType.SystemDefinedBaseType]
        DATASET: _ClassVar[ArtifactType.SystemDefinedBaseType]
        MODEL: _ClassVar[ArtifactType.SystemDefinedBaseType]
        METRICS: _ClassVar[ArtifactType.SystemDefinedBaseType]
        STATISTICS: _ClassVar[ArtifactType.SystemDefinedBaseType]
    UNSET: ArtifactType.SystemDefinedBaseType
    DATASET: ArtifactType.SystemDefinedBaseType
    MODEL: ArtifactType.SystemDefinedBaseType
    METRICS: ArtifactType.SystemDefinedBaseType
    STATISTICS: ArtifactType.SystemDefinedBaseType
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: PropertyType
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[PropertyType, str]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_ID_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    BASE_TYPE_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    version: str
    description: str
    external_id: str
    properties: _containers.ScalarMap[str, PropertyType]
    base_type: ArtifactType.SystemDefinedBaseType
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., version: _Optional[str] = ..., description: _Optional[str] = ..., external_id: _Optional[str] = ..., properties: _Optional[_Mapping[str, PropertyType]] = ..., base_type: _Optional[_Union[ArtifactType.SystemDefinedBaseType, str]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("artifact_id", "execution_id", "path", "type", "milliseconds_since_epoch", "system_metadata")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[Event.Type]
        DECLARED_OUTPUT: _ClassVar[Event.Type]
        DECLARED_INPUT: _ClassVar[Event.Type]
        INPUT: _ClassVar[Event.Type]
        OUTPUT: _ClassVar[Event.Type]
        INTERNAL_INPUT: _ClassVar[Event.Type]
        INTERNAL_OUTPUT: _ClassVar[Event.Type]
        PENDING_OUTPUT: _ClassVar[Event.Type]
    UNKNOWN: Event.Type
    DECLARED_OUTPUT: Event.Type
    DECLARED_INPUT: Event.Type
    INPUT: Event.Type
    OUTPUT: Event.Type
    INTERNAL_INPUT: Event.Type
    INTERNAL_OUTPUT: Event.Type
    PENDING_OUTPUT: Event.Type
    class Path(_message.Message):
        __slots__ = ("steps",)
        class Step(_message.Message):
            __slots__ = ("index", "key")
            INDEX_FIELD_NUMBER: _ClassVar[int]
            KEY_FIELD_NUMBER: _ClassVar[int]
            index: int
            key: str
            def __init__(self, index: _Optional[int] = ..., key: _Optional[str] = ...) -> None: ...
        STEPS_FIELD_NUMBER: _ClassVar[int]
        steps: _containers.RepeatedCompositeFieldContainer[Event.Path.Step]
        def __init__(self, steps: _Optional[_Iterable[_Union[Event.Path.Step, _Mapping]]] = ...) -> None: ...
    ARTIFACT_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    MILLISECONDS_SINCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_METADATA_FIELD_NUMBER: _ClassVar[int]
    artifact_id: int
    execution_id: int
    path: Event.Path
    type: Event.Type
    milliseconds_since_epoch: int
    system_metadata: _any_pb2.Any
    def __init__(self, artifact_id: _Optional[int] = ..., execution_id: _Optional[int] = ..., path: _Optional[_Union[Event.Path, _Mapping]] = ..., type: _Optional[_Union[Event.Type, str]] = ..., milliseconds_since_epoch: _Optional[int] = ..., system_metadata: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class Execution(_message.Message):
    __slots__ = ("id", "name", "type_id", "type", "external_id", "last_known_state", "properties", "custom_properties", "create_time_since_epoch", "last_update_time_since_epoch", "system_metadata")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[Execution.State]
        NEW: _ClassVar[Execution.State]
        RUNNING: _ClassVar[Execution.State]
        COMPLETE: _ClassVar[Execution.State]
        FAILED: _ClassVar[Execution.State]
        CACHED: _ClassVar[Execution.State]
        CANCELED: _ClassVar[Execution.State]
    UNKNOWN: Execution.State
    NEW: Execution.State
    RUNNING: Execution.State
    COMPLETE: Execution.State
    FAILED: Execution.State
    CACHED: Execution.State
    CANCELED: Execution.State
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    class CustomPropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_KNOWN_STATE_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_SINCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_UPDATE_TIME_SINCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_METADATA_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    type_id: int
    type: str
    external_id: str
    last_known_state: Execution.State
    properties: _containers.MessageMap[str, Value]
    custom_properties: _containers.MessageMap[str, Value]
    create_time_since_epoch: int
    last_update_time_since_epoch: int
    system_metadata: _any_pb2.Any
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., type_id: _Optional[int] = ..., type: _Optional[str] = ..., external_id: _Optional[str] = ..., last_known_state: _Optional[_Union[Execution.State, str]] = ..., properties: _Optional[_Mapping[str, Value]] = ..., custom_properties: _Optional[_Mapping[str, Value]] = ..., create_time_since_epoch: _Optional[int] = ..., last_update_time_since_epoch: _Optional[int] = ..., system_metadata: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class ExecutionType(_message.Message):
    __slots__ = ("id", "name", "version", "description", "external_id", "properties", "input_type", "output_type", "base_type")
    class SystemDefinedBaseType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNSET: _ClassVar[ExecutionType.SystemDefinedBaseType]
        TRAIN: _ClassVar[ExecutionType.SystemDefinedBaseType]
        TRANSFORM: _ClassVar[ExecutionType.SystemDefinedBaseType]
        PROCESS: _ClassVar[ExecutionType.SystemDefinedBaseType]
        EVALUATE: _ClassVar[ExecutionType.SystemDefinedBaseType]
        DEPLOY: _ClassVar[ExecutionType.SystemDefinedBaseType]
    UNSET: ExecutionType.SystemDefinedBaseType
    TRAIN: ExecutionType.SystemDefinedBaseType
    TRANSFORM: ExecutionType.SystemDefinedBaseType
    PROCESS: ExecutionType.SystemDefinedBaseType
    EVALUATE: ExecutionType.SystemDefinedBaseType
    DEPLOY: ExecutionType.SystemDefinedBaseType
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: PropertyType
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[PropertyType, str]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_ID_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    INPUT_TYPE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TYPE_FIELD_NUMBER: _ClassVar[int]
    BASE_TYPE_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    version: str
    description: str
    external_id: str
    properties: _containers.ScalarMap[str, PropertyType]
    input_type: ArtifactStructType
    output_type: ArtifactStructType
    base_type: ExecutionType.SystemDefinedBaseType
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., version: _Optional[str] = ..., description: _Optional[str] = ..., external_id: _Optional[str] = ..., properties: _Optional[_Mapping[str, PropertyType]] = ..., input_type: _Optional[_Union[ArtifactStructType, _Mapping]] = ..., output_type: _Optional[_Union[ArtifactStructType, _Mapping]] = ..., base_type: _Optional[_Union[ExecutionType.SystemDefinedBaseType, str]] = ...) -> None: ...

class ContextType(_message.Message):
    __slots__ = ("id", "name", "version", "description", "external_id", "properties", "base_type")
    class SystemDefinedBaseType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNSET: _ClassVar[ContextType.SystemDefinedBaseType]
    UNSET: ContextType.SystemDefinedBaseType
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: PropertyType
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[PropertyType, str]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_ID_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    BASE_TYPE_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    version: str
    description: str
    external_id: str
    properties: _containers.ScalarMap[str, PropertyType]
    base_type: ContextType.SystemDefinedBaseType
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., version: _Optional[str] = ..., description: _Optional[str] = ..., external_id: _Optional[str] = ..., properties: _Optional[_Mapping[str, PropertyType]] = ..., base_type: _Optional[_Union[ContextType.SystemDefinedBaseType, str]] = ...) -> None: ...

class Context(_message.Message):
    __slots__ = ("id", "name", "type_id", "type", "external_id", "properties", "custom_properties", "create_time_since_epoch", "last_update_time_since_epoch", "system_metadata")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    class CustomPropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_ID_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_SINCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_UPDATE_TIME_SINCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_METADATA_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    type_id: int
    type: str
    external_id: str
    properties: _containers.MessageMap[str, Value]
    custom_properties: _containers.MessageMap[str, Value]
    create_time_since_epoch: int
    last_update_time_since_epoch: int
    system_metadata: _any_pb2.Any
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., type_id: _Optional[int] = ..., type: _Optional[str] = ..., external_id: _Optional[str] = ..., properties: _Optional[_Mapping[str, Value]] = ..., custom_properties: _Optional[_Mapping[str, Value]] = ..., create_time_since_epoch: _Optional[int] = ..., last_update_time_since_epoch: _Optional[int] = ..., system_metadata: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class Attribution(_message.Message):
    __slots__ = ("artifact_id", "context_id", "system_metadata")
    ARTIFACT_ID_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_ID_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_METADATA_FIELD_NUMBER: _ClassVar[int]
    artifact_id: int
    context_id: int
    system_metadata: _any_pb2.Any
    def __init__(self, artifact_id: _Optional[int] = ..., context_id: _Optional[int] = ..., system_metadata: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class Association(_message.Message):
    __slots__ = ("execution_id", "context_id", "system_metadata")
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_ID_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_METADATA_FIELD_NUMBER: _ClassVar[int]
    execution_id: int
    context_id: int
    system_metadata: _any_pb2.Any
    def __init__(self, execution_id: _Optional[int] = ..., context_id: _Optional[int] = ..., system_metadata: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class ParentContext(_message.Message):
    __slots__ = ("child_id", "parent_id", "system_metadata")
    CHILD_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_METADATA_FIELD_NUMBER: _ClassVar[int]
    child_id: int
    parent_id: int
    system_metadata: _any_pb2.Any
    def __init__(self, child_id: _Optional[int] = ..., parent_id: _Optional[int] = ..., system_metadata: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class LineageGraph(_message.Message):
    __slots__ = ("artifact_types", "execution_types", "context_types", "artifacts", "executions", "contexts", "events", "attributions", "associations", "parent_contexts")
    ARTIFACT_TYPES_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TYPES_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_TYPES_FIELD_NUMBER: _ClassVar[int]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    CONTEXTS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTIONS_FIELD_NUMBER: _ClassVar[int]
    ASSOCIATIONS_FIELD_NUMBER: _ClassVar[int]
    PARENT_CONTEXTS_FIELD_NUMBER: _ClassVar[int]
    artifact_types: _containers.RepeatedCompositeFieldContainer[ArtifactType]
    execution_types: _containers.RepeatedCompositeFieldContainer[ExecutionType]
    context_types: _containers.RepeatedCompositeFieldContainer[ContextType]
    artifacts: _containers.RepeatedCompositeFieldContainer[Artifact]
    executions: _containers.RepeatedCompositeFieldContainer[Execution]
    contexts: _containers.RepeatedCompositeFieldContainer[Context]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    attributions: _containers.RepeatedCompositeFieldContainer[Attribution]
    associations: _containers.RepeatedCompositeFieldContainer[Association]
    parent_contexts: _containers.RepeatedCompositeFieldContainer[ParentContext]
    def __init__(self, artifact_types: _Optional[_Iterable[_Union[ArtifactType, _Mapping]]] = ..., execution_types: _Optional[_Iterable[_Union[ExecutionType, _Mapping]]] = ..., context_types: _Optional[_Iterable[_Union[ContextType, _Mapping]]] = ..., artifacts: _Optional[_Iterable[_Union[Artifact, _Mapping]]] = ..., executions: _Optional[_Iterable[_Union[Execution, _Mapping]]] = ..., contexts: _Optional[_Iterable[_Union[Context, _Mapping]]] = ..., events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ..., attributions: _Optional[_Iterable[_Union[Attribution, _Mapping]]] = ..., associations: _Optional[_Iterable[_Union[Association, _Mapping]]] = ..., parent_contexts: _Optional[_Iterable[_Union[ParentContext, _Mapping]]] = ...) -> None: ...

class ArtifactStructType(_message.Message):
    __slots__ = ("simple", "union_type", "intersection", "list", "none", "any", "tuple", "dict")
    SIMPLE_FIELD_NUMBER: _ClassVar[int]
    UNION_TYPE_FIELD_NUMBER: _ClassVar[int]
    INTERSECTION_FIELD_NUMBER: _ClassVar[int]
    LIST_FIELD_NUMBER: _ClassVar[int]
    NONE_FIELD_NUMBER: _ClassVar[int]
    ANY_FIELD_NUMBER: _ClassVar[int]
    TUPLE_FIELD_NUMBER: _ClassVar[int]
    DICT_FIELD_NUMBER: _ClassVar[int]
    simple: ArtifactType
    union_type: UnionArtifactStructType
    intersection: IntersectionArtifactStructType
    list: ListArtifactStructType
    none: NoneArtifactStructType
    any: AnyArtifactStructType
    tuple: TupleArtifactStructType
    dict: DictArtifactStructType
    def __init__(self, simple: _Optional[_Union[ArtifactType, _Mapping]] = ..., union_type: _Optional[_Union[UnionArtifactStructType, _Mapping]] = ..., intersection: _Optional[_Union[IntersectionArtifactStructType, _Mapping]] = ..., list: _Optional[_Union[ListArtifactStructType, _Mapping]] = ..., none: _Optional[_Union[NoneArtifactStructType, _Mapping]] = ..., any: _Optional[_Union[AnyArtifactStructType, _Mapping]] = ..., tuple: _Optional[_Union[TupleArtifactStructType, _Mapping]] = ..., dict: _Optional[_Union[DictArtifactStructType, _Mapping]] = ...) -> None: ...

class UnionArtifactStructType(_message.Message):
    __slots__ = ("candidates",)
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    candidates: _containers.RepeatedCompositeFieldContainer[ArtifactStructType]
    def __init__(self, candidates: _Optional[_Iterable[_Union[ArtifactStructType, _Mapping]]] = ...) -> None: ...

class IntersectionArtifactStructType(_message.Message):
    __slots__ = ("constraints",)
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    constraints: _containers.RepeatedCompositeFieldContainer[ArtifactStructType]
    def __init__(self, constraints: _Optional[_Iterable[_Union[ArtifactStructType, _Mapping]]] = ...) -> None: ...

class ListArtifactStructType(_message.Message):
    __slots__ = ("element",)
    ELEMENT_FIELD_NUMBER: _ClassVar[int]
    element: ArtifactStructType
    def __init__(self, element: _Optional[_Union[ArtifactStructType, _Mapping]] = ...) -> None: ...

class NoneArtifactStructType(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AnyArtifactStructType(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TupleArtifactStructType(_message.Message):
    __slots__ = ("elements",)
    ELEMENTS_FIELD_NUMBER: _ClassVar[int]
    elements: _containers.RepeatedCompositeFieldContainer[ArtifactStructType]
    def __init__(self, elements: _Optional[_Iterable[_Union[ArtifactStructType, _Mapping]]] = ...) -> None: ...

class DictArtifactStructType(_message.Message):
    __slots__ = ("properties", "none_type_not_required", "extra_properties_type")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ArtifactStructType
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ArtifactStructType, _Mapping]] = ...) -> None: ...
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    NONE_TYPE_NOT_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    EXTRA_PROPERTIES_TYPE_FIELD_NUMBER: _ClassVar[int]
    properties: _containers.MessageMap[str, ArtifactStructType]
    none_type_not_required: bool
    extra_properties_type: ArtifactStructType
    def __init__(self, properties: _Optional[_Mapping[str, ArtifactStructType]] = ..., none_type_not_required: _Optional[bool] = ..., extra_properties_type: _Optional[_Union[ArtifactStructType, _Mapping]] = ...) -> None: ...

class FakeDatabaseConfig(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class MySQLDatabaseConfig(_message.Message):
    __slots__ = ("host", "port", "database", "user", "password", "socket", "ssl_options", "skip_db_creation")
    class SSLOptions(_message.Message):
        __slots__ = ("key", "cert", "ca", "capath", "cipher", "verify_server_cert")
        KEY_FIELD_NUMBER: _ClassVar[int]
        CERT_FIELD_NUMBER: _ClassVar[int]
        CA_FIELD_NUMBER: _ClassVar[int]
        CAPATH_FIELD_NUMBER: _ClassVar[int]
        CIPHER_FIELD_NUMBER: _ClassVar[int]
        VERIFY_SERVER_CERT_FIELD_NUMBER: _ClassVar[int]
        key: str
        cert: str
        ca: str
        capath: str
        cipher: str
        verify_server_cert: bool
        def __init__(self, key: _Optional[str] = ..., cert: _Optional[str] = ..., ca: _Optional[str] = ..., capath: _Optional[str] = ..., cipher: _Optional[str] = ..., verify_server_cert: _Optional[bool] = ...) -> None: ...
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    DATABASE_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    SOCKET_FIELD_NUMBER: _ClassVar[int]
    SSL_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    SKIP_DB_CREATION_FIELD_NUMBER: _ClassVar[int]
    host: str
    port: int
    database: str
    user: str
    password: str
    socket: str
    ssl_options: MySQLDatabaseConfig.SSLOptions
    skip_db_creation: bool
    def __init__(self, host: _Optional[str] = ..., port: _Optional[int] = ..., database: _Optional[str] = ..., user: _Optional[str] = ..., password: _Optional[str] = ..., socket: _Optional[str] = ..., ssl_options: _Optional[_Union[MySQLDatabaseConfig.SSLOptions, _Mapping]] = ..., skip_db_creation: _Optional[bool] = ...) -> None: ...

class SqliteMetadataSourceConfig(_message.Message):
    __slots__ = ("filename_uri", "connection_mode")
    class ConnectionMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[SqliteMetadataSourceConfig.ConnectionMode]
        READONLY: _ClassVar[SqliteMetadataSourceConfig.ConnectionMode]
        READWRITE: _ClassVar[SqliteMetadataSourceConfig.ConnectionMode]
        READWRITE_OPENCREATE: _ClassVar[SqliteMetadataSourceConfig.ConnectionMode]
    UNKNOWN: SqliteMetadataSourceConfig.ConnectionMode
    READONLY: SqliteMetadataSourceConfig.ConnectionMode
    READWRITE: SqliteMetadataSourceConfig.ConnectionMode
    READWRITE_OPENCREATE: SqliteMetadataSourceConfig.ConnectionMode
    FILENAME_URI_FIELD_NUMBER: _ClassVar[int]
    CONNECTION_MODE_FIELD_NUMBER: _ClassVar[int]
    filename_uri: str
    connection_mode: SqliteMetadataSourceConfig.ConnectionMode
    def __init__(self, filename_uri: _Optional[str] = ..., connection_mode: _Optional[_Union[SqliteMetadataSourceConfig.ConnectionMode, str]] = ...) -> None: ...

class PostgreSQLDatabaseConfig(_message.Message):
    __slots__ = ("host", "hostaddr", "port", "user", "password", "passfile", "dbname", "skip_db_creation", "ssloption")
    class SSLOptions(_message.Message):
        __slots__ = ("sslmode", "sslcert", "sslkey", "sslpassword", "sslrootcert")
        SSLMODE_FIELD_NUMBER: _ClassVar[int]
        SSLCERT_FIELD_NUMBER: _ClassVar[int]
        SSLKEY_FIELD_NUMBER: _ClassVar[int]
        SSLPASSWORD_FIELD_NUMBER: _ClassVar[int]
        SSLROOTCERT_FIELD_NUMBER: _ClassVar[int]
        sslmode: str
        sslcert: str
        sslkey: str
        sslpassword: str
        sslrootcert: str
        def __init__(self, sslmode: _Optional[str] = ..., sslcert: _Optional[str] = ..., sslkey: _Optional[str] = ..., sslpassword: _Optional[str] = ..., sslrootcert: _Optional[str] = ...) -> None: ...
    HOST_FIELD_NUMBER: _ClassVar[int]
    HOSTADDR_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    PASSFILE_FIELD_NUMBER: _ClassVar[int]
    DBNAME_FIELD_NUMBER: _ClassVar[int]
    SKIP_DB_CREATION_FIELD_NUMBER: _ClassVar[int]
    SSLOPTION_FIELD_NUMBER: _ClassVar[int]
    host: str
    hostaddr: str
    port: str
    user: str
    password: str
    passfile: str
    dbname: str
    skip_db_creation: bool
    ssloption: PostgreSQLDatabaseConfig.SSLOptions
    def __init__(self, host: _Optional[str] = ..., hostaddr: _Optional[str] = ..., port: _Optional[str] = ..., user: _Optional[str] = ..., password: _Optional[str] = ..., passfile: _Optional[str] = ..., dbname: _Optional[str] = ..., skip_db_creation: _Optional[bool] = ..., ssloption: _Optional[_Union[PostgreSQLDatabaseConfig.SSLOptions, _Mapping]] = ...) -> None: ...

class MigrationOptions(_message.Message):
    __slots__ = ("enable_upgrade_migration", "downgrade_to_schema_version")
    ENABLE_UPGRADE_MIGRATION_FIELD_NUMBER: _ClassVar[int]
    DOWNGRADE_TO_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    enable_upgrade_migration: bool
    downgrade_to_schema_version: int
    def __init__(self, enable_upgrade_migration: _Optional[bool] = ..., downgrade_to_schema_version: _Optional[int] = ...) -> None: ...

class RetryOptions(_message.Message):
    __slots__ = ("max_num_retries",)
    MAX_NUM_RETRIES_FIELD_NUMBER: _ClassVar[int]
    max_num_retries: int
    def __init__(self, max_num_retries: _Optional[int] = ...) -> None: ...

class ConnectionConfig(_message.Message):
    __slots__ = ("fake_database", "mysql", "sqlite", "postgresql", "retry_options")
    FAKE_DATABASE_FIELD_NUMBER: _ClassVar[int]
    MYSQL_FIELD_NUMBER: _ClassVar[int]
    SQLITE_FIELD_NUMBER: _ClassVar[int]
    POSTGRESQL_FIELD_NUMBER: _ClassVar[int]
    RETRY_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    fake_database: FakeDatabaseConfig
    mysql: MySQLDatabaseConfig
    sqlite: SqliteMetadataSourceConfig
    postgresql: PostgreSQLDatabaseConfig
    retry_options: RetryOptions
    def __init__(self, fake_database: _Optional[_Union[FakeDatabaseConfig, _Mapping]] = ..., mysql: _Optional[_Union[MySQLDatabaseConfig, _Mapping]] = ..., sqlite: _Optional[_Union[SqliteMetadataSourceConfig, _Mapping]] = ..., postgresql: _Optional[_Union[PostgreSQLDatabaseConfig, _Mapping]] = ..., retry_options: _Optional[_Union[RetryOptions, _Mapping]] = ...) -> None: ...

class GrpcChannelArguments(_message.Message):
    __slots__ = ("max_receive_message_length", "http2_max_ping_strikes")
    MAX_RECEIVE_MESSAGE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    HTTP2_MAX_PING_STRIKES_FIELD_NUMBER: _ClassVar[int]
    max_receive_message_length: int
    http2_max_ping_strikes: int
    def __init__(self, max_receive_message_length: _Optional[int] = ..., http2_max_ping_strikes: _Optional[int] = ...) -> None: ...

class MetadataStoreClientConfig(_message.Message):
    __slots__ = ("host", "port", "ssl_config", "channel_arguments", "client_timeout_sec")
    class SSLConfig(_message.Message):
        __slots__ = ("client_key", "server_cert", "custom_ca")
        CLIENT_KEY_FIELD_NUMBER: _ClassVar[int]
        SERVER_CERT_FIELD_NUMBER: _ClassVar[int]
        CUSTOM_CA_FIELD_NUMBER: _ClassVar[int]
        client_key: str
        server_cert: str
        custom_ca: str
        def __init__(self, client_key: _Optional[str] = ..., server_cert: _Optional[str] = ..., custom_ca: _Optional[str] = ...) -> None: ...
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    SSL_CONFIG_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TIMEOUT_SEC_FIELD_NUMBER: _ClassVar[int]
    host: str
    port: int
    ssl_config: MetadataStoreClientConfig.SSLConfig
    channel_arguments: GrpcChannelArguments
    client_timeout_sec: float
    def __init__(self, host: _Optional[str] = ..., port: _Optional[int] = ..., ssl_config: _Optional[_Union[MetadataStoreClientConfig.SSLConfig, _Mapping]] = ..., channel_arguments: _Optional[_Union[GrpcChannelArguments, _Mapping]] = ..., client_timeout_sec: _Optional[float] = ...) -> None: ...

class ListOperationOptions(_message.Message):
    __slots__ = ("max_result_size", "order_by_field", "next_page_token", "filter_query")
    class OrderByField(_message.Message):
        __slots__ = ("field", "is_asc")
        class Field(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            FIELD_UNSPECIFIED: _ClassVar[ListOperationOptions.OrderByField.Field]
            CREATE_TIME: _ClassVar[ListOperationOptions.OrderByField.Field]
            LAST_UPDATE_TIME: _ClassVar[ListOperationOptions.OrderByField.Field]
            ID: _ClassVar[ListOperationOptions.OrderByField.Field]
        FIELD_UNSPECIFIED: ListOperationOptions.OrderByField.Field
        CREATE_TIME: ListOperationOptions.OrderByField.Field
        LAST_UPDATE_TIME: ListOperationOptions.OrderByField.Field
        ID: ListOperationOptions.OrderByField.Field
        FIELD_FIELD_NUMBER: _ClassVar[int]
        IS_ASC_FIELD_NUMBER: _ClassVar[int]
        field: ListOperationOptions.OrderByField.Field
        is_asc: bool
        def __init__(self, field: _Optional[_Union[ListOperationOptions.OrderByField.Field, str]] = ..., is_asc: _Optional[bool] = ...) -> None: ...
    MAX_RESULT_SIZE_FIELD_NUMBER: _ClassVar[int]
    ORDER_BY_FIELD_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    FILTER_QUERY_FIELD_NUMBER: _ClassVar[int]
    max_result_size: int
    order_by_field: ListOperationOptions.OrderByField
    next_page_token: str
    filter_query: str
    def __init__(self, max_result_size: _Optional[int] = ..., order_by_field: _Optional[_Union[ListOperationOptions.OrderByField, _Mapping]] = ..., next_page_token: _Optional[str] = ..., filter_query: _Optional[str] = ...) -> None: ...

class ListOperationNextPageToken(_message.Message):
    __slots__ = ("id_offset", "field_offset", "set_options", "listed_ids")
    ID_OFFSET_FIELD_NUMBER: _ClassVar[int]
    FIELD_OFFSET_FIELD_NUMBER: _ClassVar[int]
    SET_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    LISTED_IDS_FIELD_NUMBER: _ClassVar[int]
    id_offset: int
    field_offset: int
    set_options: ListOperationOptions
    listed_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, id_offset: _Optional[int] = ..., field_offset: _Optional[int] = ..., set_options: _Optional[_Union[ListOperationOptions, _Mapping]] = ..., listed_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class LineageSubgraphQueryOptions(_message.Message):
    __slots__ = ("starting_artifacts", "starting_executions", "max_num_hops", "direction", "ending_artifacts", "ending_executions")
    class Direction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DIRECTION_UNSPECIFIED: _ClassVar[LineageSubgraphQueryOptions.Direction]
        UPSTREAM: _ClassVar[LineageSubgraphQueryOptions.Direction]
        DOWNSTREAM: _ClassVar[LineageSubgraphQueryOptions.Direction]
        BIDIRECTIONAL: _ClassVar[LineageSubgraphQueryOptions.Direction]
    DIRECTION_UNSPECIFIED: LineageSubgraphQueryOptions.Direction
    UPSTREAM: LineageSubgraphQueryOptions.Direction
    DOWNSTREAM: LineageSubgraphQueryOptions.Direction
    BIDIRECTIONAL: LineageSubgraphQueryOptions.Direction
    class StartingNodes(_message.Message):
        __slots__ = ("filter_query",)
        FILTER_QUERY_FIELD_NUMBER: _ClassVar[int]
        filter_query: str
        def __init__(self, filter_query: _Optional[str] = ...) -> None: ...
    class EndingNodes(_message.Message):
        __slots__ = ("filter_query", "include_ending_nodes")
        FILTER_QUERY_FIELD_NUMBER: _ClassVar[int]
        INCLUDE_ENDING_NODES_FIELD_NUMBER: _ClassVar[int]
        filter_query: str
        include_ending_nodes: bool
        def __init__(self, filter_query: _Optional[str] = ..., include_ending_nodes: _Optional[bool] = ...) -> None: ...
    STARTING_ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    STARTING_EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_NUM_HOPS_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    ENDING_ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    ENDING_EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    starting_artifacts: LineageSubgraphQueryOptions.StartingNodes
    starting_executions: LineageSubgraphQueryOptions.StartingNodes
    max_num_hops: int
    direction: LineageSubgraphQueryOptions.Direction
    ending_artifacts: LineageSubgraphQueryOptions.EndingNodes
    ending_executions: LineageSubgraphQueryOptions.EndingNodes
    def __init__(self, starting_artifacts: _Optional[_Union[LineageSubgraphQueryOptions.StartingNodes, _Mapping]] = ..., starting_executions: _Optional[_Union[LineageSubgraphQueryOptions.StartingNodes, _Mapping]] = ..., max_num_hops: _Optional[int] = ..., direction: _Optional[_Union[LineageSubgraphQueryOptions.Direction, str]] = ..., ending_artifacts: _Optional[_Union[LineageSubgraphQueryOptions.EndingNodes, _Mapping]] = ..., ending_executions: _Optional[_Union[LineageSubgraphQueryOptions.EndingNodes, _Mapping]] = ...) -> None: ...
